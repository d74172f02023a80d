// `ordo bench`: whether its figures mean anything — the spread of a row's repeated measurements,
// the machine's load — and how a comparison between two rows is worded when they do not.
#pragma once

#include <string>
#include <vector>

namespace ordo::cli {

// Repetitions whose slowest is this much slower than their fastest are too noisy to compare.
constexpr double kNoisySpread = 0.25;

// max / min − 1 of the repetitions' times; 0 for fewer than two.
double repetition_spread(const std::vector<double>& seconds);

// The 1-minute load average; negative when unknown.
double load_average();

// Why the figures cannot be trusted ("" when they can): the repetitions spread by more than
// kNoisySpread, or more runnable threads than cores (the load average above cores + 1).
std::string busy_reason(double spread, double load, int cores);

// "decode at ctx 1024 is 12% slower than at ctx 128" — or, when the machine was busy (`busy`, a
// busy_reason) or either row is too noisy, says that instead of a percentage; a difference within
// the spread is "no measurable difference".
std::string speed_comparison(const std::string& what, double tok_s, double base_tok_s, const std::string& base,
                             double spread, double base_spread, const std::string& busy = "");

}  // namespace ordo::cli
