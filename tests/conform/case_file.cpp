// Case file reader and writer; see case_file.hpp for the contract.
#include "case_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace edgeattn_conform {

const char *role_name(Role role) {
    switch (role) {
    case Role::input: return "input";
    case Role::expect: return "expect";
    case Role::result: return "result";
    }
    return "?";
}

const char *kind_name(Kind kind) {
    switch (kind) {
    case Kind::f32: return "f32";
    case Kind::f64: return "f64";
    case Kind::i32: return "i32";
    }
    return "?";
}

std::size_t Tensor::count() const {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;
    return n;
}

const Tensor *Case::find(Role role, const std::string &name) const {
    for (const Tensor &t : tensors)
        if (t.role == role && t.name == name) return &t;
    return nullptr;
}

const Param *Case::find_param(const std::string &key) const {
    for (const Param &p : params)
        if (p.key == key) return &p;
    return nullptr;
}

std::string shape_string(const std::vector<std::size_t> &shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i) s += ',';
        s += std::to_string(shape[i]);
    }
    return s + ")";
}

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// A token for messages: printable ASCII kept, anything else as \xNN, and cut
// short, so that a message about a hostile file stays one readable line.
std::string quoted(const std::string &tok) {
    std::string s = "'";
    for (std::size_t i = 0; i < tok.size(); ++i) {
        if (i == 32) {
            s += "...";
            break;
        }
        unsigned char c = static_cast<unsigned char>(tok[i]);
        if (c >= 0x20 && c < 0x7f && c != '\'') {
            s += static_cast<char>(c);
        } else {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            s += buf;
        }
    }
    return s + "'";
}

// Whitespace-separated tokens with the line each starts on.
class Lexer {
public:
    explicit Lexer(const std::string &text) : text_(text) {}

    // False at the end of the text.
    bool next(std::string &tok) {
        while (pos_ < text_.size() && is_space(text_[pos_])) {
            if (text_[pos_] == '\n') ++line_;
            ++pos_;
        }
        if (pos_ == text_.size()) return false;
        std::size_t start = pos_;
        while (pos_ < text_.size() && !is_space(text_[pos_])) ++pos_;
        tok.assign(text_, start, pos_ - start);
        tok_line_ = line_;
        return true;
    }

    // Line of the last token, or the current line at the end of the text.
    std::size_t line() const { return tok_line_; }
    std::size_t end_line() const { return line_; }

private:
    const std::string &text_;
    std::size_t pos_ = 0;
    std::size_t line_ = 1;
    std::size_t tok_line_ = 1;
};

// Names (op, param keys, tensor names) are identifiers, which keeps them safe
// to echo in messages and to write back.
bool is_name(const std::string &s) {
    if (s.empty() || s.size() > kMaxNameLength) return false;
    for (char c : s) {
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '_';
        if (!ok) return false;
    }
    return true;
}

bool is_keyword(const std::string &s) {
    return s == "param" || s == "input" || s == "expect" || s == "result" || s == "end" ||
           s == "op";
}

// Longest numeral accepted; a longer token is an error, not a huge copy.
constexpr std::size_t kMaxNumberLength = 64;

// Decimal integer, optional sign, whole token, within [lo, hi].
bool parse_int(const std::string &tok, long long lo, long long hi, long long &v) {
    if (tok.empty() || tok.size() > kMaxNumberLength) return false;
    std::size_t i = (tok[0] == '-' || tok[0] == '+') ? 1 : 0;
    if (i == tok.size()) return false;
    for (std::size_t j = i; j < tok.size(); ++j)
        if (tok[j] < '0' || tok[j] > '9') return false;
    errno = 0;
    char *end = nullptr;
    long long x = std::strtoll(tok.c_str(), &end, 10);
    if (errno == ERANGE || end != tok.c_str() + tok.size() || x < lo || x > hi) return false;
    v = x;
    return true;
}

// A value of the given kind. nan and inf are accepted (a result file may hold
// them and the checker must see them); a finite numeral that overflows is not.
bool parse_value(const std::string &tok, Kind kind, double &v) {
    if (tok.empty() || tok.size() > kMaxNumberLength) return false;
    if (kind == Kind::i32) {
        long long x = 0;
        if (!parse_int(tok, INT32_MIN, INT32_MAX, x)) return false;
        v = static_cast<double>(x);
        return true;
    }
    errno = 0;
    char *end = nullptr;
    if (kind == Kind::f32) {
        float x = std::strtof(tok.c_str(), &end);
        if (end != tok.c_str() + tok.size()) return false;
        if (errno == ERANGE && std::isinf(x)) return false;
        v = static_cast<double>(x);
    } else {
        double x = std::strtod(tok.c_str(), &end);
        if (end != tok.c_str() + tok.size()) return false;
        if (errno == ERANGE && std::isinf(x)) return false;
        v = x;
    }
    return true;
}

class Parser {
public:
    Parser(const std::string &text, Case &out, std::string &err)
        : lex_(text), out_(out), err_(err) {}

    bool run() {
        out_ = Case();
        std::string tok;
        if (!lex_.next(tok) || tok != "edgeattn-case")
            return fail("not an edgeattn case file (it must start with 'edgeattn-case 1')");
        if (!lex_.next(tok)) return fail_eof("the format version");
        if (tok != "1") return fail("unsupported format version " + quoted(tok) + " (this reader knows 1)");
        if (!lex_.next(tok) || tok != "op") return fail("expected 'op NAME' after the version line");
        if (!lex_.next(tok)) return fail_eof("the op name");
        if (!is_name(tok)) return fail("bad op name " + quoted(tok));
        out_.op = tok;
        for (;;) {
            if (!lex_.next(tok)) return fail_eof("'end'");
            if (tok == "end") break;
            if (tok == "param") {
                if (!param()) return false;
            } else if (tok == "input" || tok == "expect" || tok == "result") {
                if (!tensor(tok)) return false;
            } else {
                double ignored = 0;
                if (!out_.tensors.empty() && parse_value(tok, Kind::f64, ignored))
                    return fail("tensor '" + out_.tensors.back().name + "' has more values than its shape " +
                                shape_string(out_.tensors.back().shape) + " holds");
                return fail("unexpected " + quoted(tok) + " (expected param, input, expect, result or end)");
            }
        }
        if (lex_.next(tok)) return fail("text after 'end': " + quoted(tok));
        return true;
    }

private:
    bool fail(const std::string &msg) {
        err_ = "line " + std::to_string(lex_.line()) + ": " + msg;
        return false;
    }
    bool fail_eof(const std::string &what) {
        err_ = "line " + std::to_string(lex_.end_line()) + ": file ends where " + what + " should be";
        return false;
    }

    bool param() {
        std::string key, val;
        if (!out_.tensors.empty()) return fail("'param' after a tensor (params come first)");
        if (!lex_.next(key)) return fail_eof("a param name");
        if (!is_name(key)) return fail("bad param name " + quoted(key));
        if (!lex_.next(val)) return fail_eof("the value of param '" + key + "'");
        long long v = 0;
        if (!parse_int(val, INT64_MIN, INT64_MAX, v))
            return fail("param '" + key + "': " + quoted(val) + " is not a 64-bit integer");
        if (out_.find_param(key)) return fail("param '" + key + "' given twice");
        if (out_.params.size() == kMaxParams) return fail("more than " + std::to_string(kMaxParams) + " params");
        out_.params.push_back(Param{key, static_cast<std::int64_t>(v)});
        return true;
    }

    bool tensor(const std::string &role_tok) {
        Tensor t;
        t.role = role_tok == "input" ? Role::input : role_tok == "expect" ? Role::expect : Role::result;
        std::string tok;
        if (!lex_.next(tok)) return fail_eof("a tensor name");
        if (!is_name(tok)) return fail("bad tensor name " + quoted(tok));
        t.name = tok;
        const std::string what = "tensor '" + t.name + "'";
        if (out_.find(t.role, t.name)) return fail(role_tok + " " + what + " given twice");
        if (out_.tensors.size() == kMaxTensors)
            return fail("more than " + std::to_string(kMaxTensors) + " tensors");
        if (!lex_.next(tok)) return fail_eof("the kind of " + what);
        if (tok == "f32") t.kind = Kind::f32;
        else if (tok == "f64") t.kind = Kind::f64;
        else if (tok == "i32") t.kind = Kind::i32;
        else return fail(what + ": unknown kind " + quoted(tok) + " (f32, f64 or i32)");
        if (!lex_.next(tok)) return fail_eof("the rank of " + what);
        long long rank = 0;
        if (!parse_int(tok, 0, static_cast<long long>(kMaxRank), rank))
            return fail(what + ": rank " + quoted(tok) + " is not an integer in 0.." + std::to_string(kMaxRank));
        // Each dimension and each partial product stays <= kMaxElements, so
        // the product cannot overflow.
        std::uint64_t count = 1;
        for (long long i = 0; i < rank; ++i) {
            if (!lex_.next(tok)) return fail_eof("dimension " + std::to_string(i) + " of " + what);
            long long d = 0;
            if (!parse_int(tok, 0, static_cast<long long>(kMaxElements), d))
                return fail(what + ": dimension " + quoted(tok) + " is not an integer in 0.." +
                            std::to_string(kMaxElements));
            t.shape.push_back(static_cast<std::size_t>(d));
            count *= static_cast<std::uint64_t>(d);
            if (count > kMaxElements)
                return fail(what + " has more than " + std::to_string(kMaxElements) + " elements");
        }
        total_ += count;
        if (total_ > kMaxElements)
            return fail("the file's tensors hold more than " + std::to_string(kMaxElements) + " elements");
        // Grow with what is really there: a header alone cannot make us allocate.
        t.values.reserve(static_cast<std::size_t>(count < 4096 ? count : 4096));
        for (std::uint64_t i = 0; i < count; ++i) {
            if (!lex_.next(tok))
                return fail_eof("value " + std::to_string(i + 1) + " of " + std::to_string(count) + " of " + what);
            double v = 0;
            if (!parse_value(tok, t.kind, v)) {
                if (is_keyword(tok))
                    return fail(what + " has " + std::to_string(i) + " values; its shape " +
                                shape_string(t.shape) + " needs " + std::to_string(count));
                return fail(what + ": " + quoted(tok) + " is not a valid " + kind_name(t.kind) + " value");
            }
            t.values.push_back(v);
        }
        out_.tensors.push_back(std::move(t));
        return true;
    }

    Lexer lex_;
    Case &out_;
    std::string &err_;
    std::uint64_t total_ = 0;
};

// %.Ng with the smallest N in 15..17 that reads back to the same double.
void append_f64(std::string &s, double v) {
    char buf[40];
    for (int prec = 15; prec <= 17; ++prec) {
        std::snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (prec == 17 || std::strtod(buf, nullptr) == v || v != v) break;
    }
    s += buf;
}

void append_value(std::string &s, Kind kind, double v) {
    char buf[40];
    switch (kind) {
    case Kind::f32: std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(static_cast<float>(v))); break;
    case Kind::i32: std::snprintf(buf, sizeof buf, "%d", static_cast<int>(v)); break;
    case Kind::f64: append_f64(s, v); return;
    }
    s += buf;
}

} // namespace

bool parse_case(const std::string &text, Case &out, std::string &err) {
    return Parser(text, out, err).run();
}

bool read_case_file(const std::string &path, Case &out, std::string &err) {
    std::FILE *f = std::fopen(path.c_str(), "rb");
    if (!f) {
        err = path + ": cannot open: " + std::strerror(errno);
        return false;
    }
    std::string text;
    char buf[1 << 16];
    bool ok = true;
    for (;;) {
        std::size_t n = std::fread(buf, 1, sizeof buf, f);
        text.append(buf, n);
        if (text.size() > kMaxFileBytes) {
            err = path + ": larger than " + std::to_string(kMaxFileBytes) + " bytes";
            ok = false;
            break;
        }
        if (n < sizeof buf) {
            if (std::ferror(f)) {
                err = path + ": read error: " + std::strerror(errno);
                ok = false;
            }
            break;
        }
    }
    std::fclose(f);
    if (!ok) return false;
    if (!parse_case(text, out, err)) {
        err = path + ": " + err;
        return false;
    }
    return true;
}

std::string format_case(const Case &c) {
    std::string s = "edgeattn-case " + std::to_string(c.version) + "\nop " + c.op + "\n";
    for (const Param &p : c.params) s += "param " + p.key + " " + std::to_string(p.value) + "\n";
    for (const Tensor &t : c.tensors) {
        s += std::string(role_name(t.role)) + " " + t.name + " " + kind_name(t.kind) + " " +
             std::to_string(t.shape.size());
        for (std::size_t d : t.shape) s += " " + std::to_string(d);
        s += "\n";
        for (std::size_t i = 0; i < t.values.size(); ++i) {
            append_value(s, t.kind, t.values[i]);
            s += (i % 8 == 7 || i + 1 == t.values.size()) ? '\n' : ' ';
        }
    }
    return s + "end\n";
}

bool write_case_file(const std::string &path, const Case &c, std::string &err) {
    const std::string text = format_case(c);
    std::FILE *f = std::fopen(path.c_str(), "wb");
    if (!f) {
        err = path + ": cannot create: " + std::strerror(errno);
        return false;
    }
    bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fclose(f) == 0) && ok;
    if (!ok) {
        err = path + ": write error";
        std::remove(path.c_str());
    }
    return ok;
}

} // namespace edgeattn_conform
