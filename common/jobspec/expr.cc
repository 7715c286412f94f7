#include "common/jobspec/expr.h"

#include <cctype>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace iofleet::jobspec::internal {
namespace {

class Evaluator {
 public:
  Evaluator(const std::string& s, const UnitFn& unit) : s_(s), unit_(unit) {}

  absl::StatusOr<int64_t> Run(uint64_t implied_units) {
    auto v = Expr();
    if (!v.ok()) return v;
    SkipBlanks();
    if (pos_ != s_.size()) return Error("unexpected text");
    if (units_specified_ || implied_units == 1) return v;
    int64_t r;
    if (implied_units > static_cast<uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(*v, static_cast<int64_t>(implied_units), &r)) {
      return Error("overflow");
    }
    return r;
  }

 private:
  absl::Status Error(const char* what) {
    return absl::InvalidArgumentError(absl::StrFormat("%s at offset %d", what, pos_));
  }

  void SkipBlanks() {
    while (pos_ < s_.size() && isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  bool Eat(char c) {
    SkipBlanks();
    if (pos_ < s_.size() && s_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  // expr := term (('+'|'-') term)*
  absl::StatusOr<int64_t> Expr() {
    auto lhs = Term();
    if (!lhs.ok()) return lhs;
    int64_t v = *lhs;
    while (true) {
      if (Eat('+')) {
        auto r = Term();
        if (!r.ok()) return r;
        if (__builtin_add_overflow(v, *r, &v)) return Error("overflow");
      } else if (Eat('-')) {
        auto r = Term();
        if (!r.ok()) return r;
        if (__builtin_sub_overflow(v, *r, &v)) return Error("overflow");
      } else {
        return v;
      }
    }
  }

  // term := unary (('*'|'/'|'%') unary)*
  absl::StatusOr<int64_t> Term() {
    auto lhs = Unary();
    if (!lhs.ok()) return lhs;
    int64_t v = *lhs;
    while (true) {
      if (Eat('*')) {
        auto r = Unary();
        if (!r.ok()) return r;
        if (__builtin_mul_overflow(v, *r, &v)) return Error("overflow");
      } else if (Eat('/') || Eat('%')) {
        const bool mod = s_[pos_ - 1] == '%';
        auto r = Unary();
        if (!r.ok()) return r;
        if (*r == 0) return Error("division by zero");
        if (v == INT64_MIN && *r == -1) return Error("overflow");
        v = mod ? v % *r : v / *r;
      } else {
        return v;
      }
    }
  }

  // unary := ('-'|'+') unary | power
  absl::StatusOr<int64_t> Unary() {
    if (Eat('-')) {
      auto v = Unary();
      if (!v.ok()) return v;
      if (*v == INT64_MIN) return Error("overflow");
      return -*v;
    }
    if (Eat('+')) return Unary();
    return Power();
  }

  // power := primary ('^' unary)?   (right-associative)
  absl::StatusOr<int64_t> Power() {
    auto base = Primary();
    if (!base.ok()) return base;
    if (!Eat('^')) return base;
    auto exp = Unary();
    if (!exp.ok()) return exp;
    if (*exp < 0) return Error("negative exponent");
    int64_t r = 1;
    for (int64_t i = 0; i < *exp; ++i) {
      if (__builtin_mul_overflow(r, *base, &r)) return Error("overflow");
      if (r == 0 || r == 1) break;
    }
    return r;
  }

  // primary := '(' expr ')' | number [suffix]
  absl::StatusOr<int64_t> Primary() {
    if (Eat('(')) {
      auto v = Expr();
      if (!v.ok()) return v;
      if (!Eat(')')) return Error("missing ')'");
      return v;
    }
    SkipBlanks();
    const size_t start = pos_;
    int base = 10;
    if (pos_ + 1 < s_.size() && s_[pos_] == '0' && (s_[pos_ + 1] == 'x' || s_[pos_ + 1] == 'X')) {
      base = 16;
      pos_ += 2;
    }
    const size_t digits = pos_;
    uint64_t v = 0;
    while (pos_ < s_.size()) {
      const char c = s_[pos_];
      int d;
      if (c >= '0' && c <= '9')
        d = c - '0';
      else if (base == 16 && isxdigit(static_cast<unsigned char>(c)))
        d = tolower(c) - 'a' + 10;
      else
        break;
      if (v > (static_cast<uint64_t>(INT64_MAX) - d) / base) return Error("overflow");
      v = v * base + d;
      ++pos_;
    }
    if (pos_ == digits) {
      pos_ = start;
      return Error("expected a number");
    }
    const size_t suf = pos_;
    while (pos_ < s_.size() && isalpha(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    std::optional<uint64_t> mult = 1;
    if (pos_ > suf) {
      mult = unit_(s_.substr(suf, pos_ - suf));
      if (!mult) {
        pos_ = suf;
        return Error("unknown suffix");
      }
      units_specified_ = true;
    }
    int64_t r;
    if (*mult > static_cast<uint64_t>(INT64_MAX) ||
        __builtin_mul_overflow(static_cast<int64_t>(v), static_cast<int64_t>(*mult), &r)) {
      return Error("overflow");
    }
    return r;
  }

  const std::string& s_;
  const UnitFn& unit_;
  size_t pos_ = 0;
  bool units_specified_ = false;
};

}  // namespace

absl::StatusOr<int64_t> EvaluateExpression(const std::string& expr, const UnitFn& unit,
                                           uint64_t implied_units) {
  return Evaluator(expr, unit).Run(implied_units);
}

}  // namespace iofleet::jobspec::internal
