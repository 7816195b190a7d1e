// arg_schema: a program's named, typed, bounded arguments, checked before
// anything runs (the protocol's bad_args, docs/server.md).
//
// Invariants
//  * rules_ holds at most one rule per name, in declaration order (describe()
//    and error messages list them in that order).
//  * Every bound is consistent when the rule is declared (min <= max, the
//    default within the bounds and of the right type), so validate() can
//    only fail because of the caller's args, never because of the schema.
//  * validate() accepts only exact JSON types: an integer argument refuses
//    1.5, 30.0 and "30"; a number accepts integers; nothing is coerced.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <variant>

#include "promptly/server/job_server.hpp"

namespace promptly::server {

struct arg_schema::rule {
  std::string name;
  std::variant<integer_rule, number_rule, string_rule, boolean_rule> r;
};

namespace {

std::string arg_name(const std::string& name) { return "'" + name + "'"; }

template <class T>
std::string num(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    json j = v;
    return j.dump();
  } else {
    return std::to_string(v);
  }
}

// Rules are taken as `auto`: arg_schema::rule is private; only its members are used here.
void check_name(const auto& rules, const std::string& name) {
  if (name.empty()) throw std::invalid_argument("arg_schema: an argument needs a name");
  for (const auto& r : rules)
    if (r->name == name) throw std::invalid_argument("arg_schema: argument " + arg_name(name) + " declared twice");
}

std::string join_names(const auto& rules) {
  if (rules.empty()) return "none";
  std::string out;
  for (const auto& r : rules) out += (out.empty() ? "" : ", ") + r->name;
  return out;
}

template <class T>
void check_bounds(const std::string& name, const std::optional<T>& min, const std::optional<T>& max,
                  const std::optional<T>& def) {
  if (min && max && *min > *max)
    throw std::invalid_argument("arg_schema: argument " + arg_name(name) + ": min " + num(*min) + " > max " + num(*max));
  if (def && ((min && *def < *min) || (max && *def > *max)))
    throw std::invalid_argument("arg_schema: argument " + arg_name(name) + ": default " + num(*def) + " outside its bounds");
}

template <class T>
void check_range(const std::string& name, T v, const std::optional<T>& min, const std::optional<T>& max) {
  if (min && v < *min)
    throw error(error_code::bad_args, "argument " + arg_name(name) + " is " + num(v) + ", below the minimum " + num(*min));
  if (max && v > *max)
    throw error(error_code::bad_args, "argument " + arg_name(name) + " is " + num(v) + ", above the maximum " + num(*max));
}

std::string type_name(const json& v) {
  if (v.is_number_float()) return "the number " + v.dump();
  if (v.is_number()) return "the integer " + v.dump();
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  return "an object";
}

json check_value(const auto& rule, const json& v) {
  const std::string& name = rule.name;
  return std::visit(
      [&](const auto& r) -> json {
        using R = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<R, arg_schema::integer_rule>) {
          if (!v.is_number_integer())
            throw error(error_code::bad_args, "argument " + arg_name(name) + " must be an integer, got " + type_name(v));
          if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            throw error(error_code::bad_args, "argument " + arg_name(name) + " is " + v.dump() + ", out of the 64-bit integer range");
          const auto x = v.get<std::int64_t>();
          check_range(name, x, r.min, r.max);
          if (r.power_of_two && (x <= 0 || (x & (x - 1)) != 0))
            throw error(error_code::bad_args, "argument " + arg_name(name) + " is " + num(x) + ", not a power of two");
          return x;
        } else if constexpr (std::is_same_v<R, arg_schema::number_rule>) {
          if (!v.is_number())
            throw error(error_code::bad_args, "argument " + arg_name(name) + " must be a number, got " + type_name(v));
          const auto x = v.get<double>();
          if (!std::isfinite(x)) throw error(error_code::bad_args, "argument " + arg_name(name) + " must be finite");
          check_range(name, x, r.min, r.max);
          return x;
        } else if constexpr (std::is_same_v<R, arg_schema::string_rule>) {
          if (!v.is_string())
            throw error(error_code::bad_args, "argument " + arg_name(name) + " must be a string, got " + type_name(v));
          const auto& s = v.get_ref<const std::string&>();
          if (s.size() > r.max_length)
            throw error(error_code::bad_args, "argument " + arg_name(name) + " is " + std::to_string(s.size()) +
                                                  " bytes long, above the maximum length " + std::to_string(r.max_length));
          if (!r.one_of.empty()) {
            bool found = false;
            std::string allowed;
            for (const auto& o : r.one_of) {
              found = found || o == s;
              allowed += (allowed.empty() ? "" : ", ") + o;
            }
            if (!found)
              throw error(error_code::bad_args, "argument " + arg_name(name) + " must be one of " + allowed + ", got " + json(s).dump());
          }
          return s;
        } else {
          if (!v.is_boolean())
            throw error(error_code::bad_args, "argument " + arg_name(name) + " must be a boolean, got " + type_name(v));
          return v.get<bool>();
        }
      },
      rule.r);
}

}  // namespace

arg_schema& arg_schema::integer(std::string name, integer_rule rule) {
  check_name(rules_, name);
  check_bounds(name, rule.min, rule.max, rule.default_value);
  if (rule.power_of_two && rule.default_value && (*rule.default_value <= 0 || (*rule.default_value & (*rule.default_value - 1)) != 0))
    throw std::invalid_argument("arg_schema: argument " + arg_name(name) + ": default " + num(*rule.default_value) +
                                " is not a power of two");
  rules_.push_back(std::make_shared<const arg_schema::rule>(arg_schema::rule{std::move(name), std::move(rule)}));
  return *this;
}

arg_schema& arg_schema::number(std::string name, number_rule rule) {
  check_name(rules_, name);
  for (const auto* b : {&rule.min, &rule.max, &rule.default_value})
    if (*b && !std::isfinite(**b)) throw std::invalid_argument("arg_schema: argument " + arg_name(name) + ": bounds must be finite");
  check_bounds(name, rule.min, rule.max, rule.default_value);
  rules_.push_back(std::make_shared<const arg_schema::rule>(arg_schema::rule{std::move(name), std::move(rule)}));
  return *this;
}

arg_schema& arg_schema::string(std::string name, string_rule rule) {
  check_name(rules_, name);
  if (rule.default_value) {
    arg_schema::rule probe{name, rule};
    try {
      (void)check_value(probe, *rule.default_value);
    } catch (const error& e) {
      throw std::invalid_argument(std::string("arg_schema: default breaks its own rule: ") + e.what());
    }
  }
  rules_.push_back(std::make_shared<const arg_schema::rule>(arg_schema::rule{std::move(name), std::move(rule)}));
  return *this;
}

arg_schema& arg_schema::boolean(std::string name, boolean_rule rule) {
  check_name(rules_, name);
  rules_.push_back(std::make_shared<const arg_schema::rule>(arg_schema::rule{std::move(name), std::move(rule)}));
  return *this;
}

json arg_schema::validate(const json& args) const {
  if (!args.is_null() && !args.is_object())
    throw error(error_code::bad_args, "args must be a JSON object of named arguments, got " + type_name(args));
  json out = json::object();
  if (args.is_object()) {
    for (const auto& [key, value] : args.items()) {
      const rule* found = nullptr;
      for (const auto& r : rules_)
        if (r->name == key) found = r.get();
      if (found == nullptr) {
        std::string shown = key.size() > 64 ? key.substr(0, 64) + "..." : key;
        throw error(error_code::bad_args, "unknown argument " + json(shown).dump() + " (the program takes: " + join_names(rules_) + ")");
      }
      out[key] = check_value(*found, value);
    }
  }
  for (const auto& r : rules_) {
    if (out.contains(r->name)) continue;
    std::visit(
        [&](const auto& rr) {
          if (!rr.default_value) throw error(error_code::bad_args, "missing required argument " + arg_name(r->name));
          out[r->name] = *rr.default_value;
        },
        r->r);
  }
  return out;
}

json arg_schema::describe() const {
  json out = json::array();
  for (const auto& r : rules_) {
    json d;
    d["name"] = r->name;
    std::visit(
        [&](const auto& rr) {
          using R = std::decay_t<decltype(rr)>;
          if constexpr (std::is_same_v<R, integer_rule>) {
            d["type"] = "integer";
            if (rr.power_of_two) d["power_of_two"] = true;
          }
          if constexpr (std::is_same_v<R, number_rule>) d["type"] = "number";
          if constexpr (std::is_same_v<R, string_rule>) {
            d["type"] = "string";
            d["max_length"] = rr.max_length;
            if (!rr.one_of.empty()) d["one_of"] = rr.one_of;
          }
          if constexpr (std::is_same_v<R, boolean_rule>) d["type"] = "boolean";
          if constexpr (std::is_same_v<R, integer_rule> || std::is_same_v<R, number_rule>) {
            if (rr.min) d["min"] = *rr.min;
            if (rr.max) d["max"] = *rr.max;
          }
          if (rr.default_value) d["default"] = *rr.default_value;
          else d["required"] = true;
          if (!rr.help.empty()) d["help"] = rr.help;
        },
        r->r);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace promptly::server
