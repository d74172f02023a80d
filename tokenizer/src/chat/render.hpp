// The chat-template renderer (statements and expressions) and its builtins (filters, tests,
// methods, globals), as jinja2's ImmutableSandboxedEnvironment with transformers' additions.
#pragma once

#include <string>
#include <unordered_map>

#include "syntax.hpp"

namespace ordo::chat {

// Renders a parsed template with `vars` (messages, add_generation_prompt, bos_token, ...) on top
// of the globals (range, namespace, raise_exception, strftime_now, dict).
std::string render(const Body& body, const std::vector<std::pair<std::string, Value>>& vars);

// Throws an Error naming the first filter or test the renderer does not know (jinja2 refuses these
// when it compiles a template, so a template never half-renders).
void check_names(const Body& body);

// ---- builtins (filters.cpp: filters, tests, globals; builtins.cpp: access and methods) ---------
bool has_filter(const std::string& name);
bool has_test(const std::string& name);
Value apply_filter(const std::string& name, const Value& in, Args& args, const std::string& where);
bool apply_test(const std::string& name, const Value& in, Args& args, const std::string& where);
// obj.name as jinja2's sandboxed getattr: a bound method of str/dict, a dict item, a namespace
// attribute, else Undefined (with jinja2's "has no attribute" hint).
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);
void add_globals(std::unordered_map<std::string, Value>& globals);
// Raises jinja2's UndefinedError for an operation on an undefined value.
[[noreturn]] void undefined_error(const Value& v);

}  // namespace ordo::chat
