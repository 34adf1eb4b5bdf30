#include "report.hpp"

#include <cmath>

#include "semihosting.h"

namespace firmware {

void Line::put(char c) {
    if (length_ + 1 < sizeof text_) text_[length_++] = c;
}

Line &Line::operator<<(const char *text) {
    while (*text) put(*text++);
    return *this;
}

Line &Line::operator<<(std::size_t value) {
    char digits[24];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + value % 10);
        value /= 10;
    } while (value);
    while (n) put(digits[--n]);
    return *this;
}

Line &Line::operator<<(int value) {
    if (value < 0) {
        put('-');
        return *this << static_cast<std::size_t>(-static_cast<long long>(value));
    }
    return *this << static_cast<std::size_t>(value);
}

Line &Line::operator<<(double value) {
    if (std::isnan(value)) return *this << "nan";
    if (value < 0) {
        put('-');
        value = -value;
    }
    if (std::isinf(value)) return *this << "inf";
    if (value == 0) return *this << "0";
    int exponent = static_cast<int>(std::floor(std::log10(value)));
    long mantissa = std::lround(value / std::pow(10.0, exponent) * 100.0);  // 3 digits
    if (mantissa >= 1000) {
        mantissa /= 10;
        ++exponent;
    }
    put(static_cast<char>('0' + mantissa / 100));
    put('.');
    put(static_cast<char>('0' + mantissa / 10 % 10));
    put(static_cast<char>('0' + mantissa % 10));
    put('e');
    put(exponent < 0 ? '-' : '+');
    const int e = exponent < 0 ? -exponent : exponent;
    if (e < 10) put('0');
    return *this << e;
}

Line::~Line() {
    put('\n');
    text_[length_] = '\0';
    semihosting_write(text_);
}

}  // namespace firmware
