// Line output for the test firmware over semihosting, without stdio (newlib's
// printf would bring a heap): text, unsigned integers and doubles in
// scientific notation (3 significant digits, enough for error reports).
#ifndef EDGEATTN_FIRMWARE_REPORT_HPP
#define EDGEATTN_FIRMWARE_REPORT_HPP

#include <cstddef>

namespace firmware {

class Line {
  public:
    Line &operator<<(const char *text);
    Line &operator<<(std::size_t value);
    Line &operator<<(int value);
    Line &operator<<(double value);  // e.g. 1.23e-07
    ~Line();  // writes the line and a newline

  private:
    void put(char c);
    char text_[320];
    std::size_t length_ = 0;
};

}  // namespace firmware

#endif
