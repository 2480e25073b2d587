// Suggestions for misspelt names (solver options, result columns, model names): one distance
// for every "did you mean" of mbs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace mbs::rt {

// Optimal-string-alignment distance: insertions, deletions, substitutions and transpositions of
// adjacent characters each cost 1 ("veloctiy" is 1 from "velocity").
size_t edit_distance(std::string_view a, std::string_view b);

// The `count` candidates nearest to `name`, nearest first (ties in the candidates' order).
std::vector<std::string> nearest_names(std::string_view name,
                                       const std::vector<std::string>& candidates, size_t count);

// The candidate nearest to `name` when it is close enough to be what was meant: at most a third
// of the name wrong, at least `slack` edits allowed (short names), and not every character;
// "" otherwise. The one rule of every "did you mean" of a name.
std::string meant_name(std::string_view name, const std::vector<std::string>& candidates,
                       size_t slack = 2);

}  // namespace mbs::rt
