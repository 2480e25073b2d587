// What an event does to a model (Events.h).
#include "runtime/model/Events.h"

#include <fmt/format.h>

namespace mbs::rt {

void rising_branches(const CompiledModel& m, std::span<const double> before,
                     std::span<const double> after, std::vector<int32_t>& fired) {
  const auto nc = static_cast<size_t>(m.n_crossings);
  fired.clear();
  for (int32_t w = 0; w < m.n_whens(); ++w)
    for (int32_t b = m.when_first_branch[w]; b < m.when_first_branch[w + 1]; ++b) {
      const size_t i = nc + static_cast<size_t>(b);
      if (before[i] == 0.0 && after[i] != 0.0) {
        fired.push_back(b);
        break;
      }
    }
}

void initial_branches(const CompiledModel& m, std::span<const double> conditions,
                      std::vector<int32_t>& fired) {
  const auto nc = static_cast<size_t>(m.n_crossings);
  fired.clear();
  for (int32_t w = 0; w < m.n_whens(); ++w)
    for (int32_t b = m.when_first_branch[w]; b < m.when_first_branch[w + 1]; ++b)
      if (m.branch_initial[static_cast<size_t>(b)] != 0 &&
          conditions[nc + static_cast<size_t>(b)] != 0.0) {
        fired.push_back(b);
        break;
      }
}

namespace {

// The events kernel at v into `out`; its status (< 0: fatal).
int32_t evaluate(const CompiledModel& m, std::span<const double> v, std::vector<double>& out) {
  out.resize(static_cast<size_t>(m.events.n_out));
  return m.events(v.data(), out.data());
}

}  // namespace

EventOutcome apply_event(const CompiledModel& m, std::span<double> v, std::vector<int32_t>& fired,
                         std::vector<double>& basis, std::vector<double>& after,
                         std::vector<double>& reinit_values) {
  EventOutcome out;
  for (int iteration = 0; !fired.empty(); ++iteration) {
    out.iterations = iteration;
    if (iteration == kMaxEventIterations) {
      out.kind = EventOutcome::Kind::NotSettled;
      out.branch = fired.front();
      return out;
    }
    reinit_values.resize(static_cast<size_t>(m.event_reinit.n_out));
    if (m.event_reinit.n_out > 0) {
      const int32_t st = m.event_reinit(v.data(), reinit_values.data());
      if (st != 0) {
        out.kind = EventOutcome::Kind::KernelFailed;
        out.kernel_status = st;
        out.reinit_kernel = true;
        return out;
      }
    }
    // every reinit and assignment reads the values before the event (simultaneous assignment)
    for (const int32_t b : fired)
      for (int32_t r = m.branch_first_reinit[b]; r < m.branch_first_reinit[b + 1]; ++r)
        v[static_cast<size_t>(m.reinit_slot[r])] =
            reinit_values[static_cast<size_t>(r)] / m.reinit_scale[r];
    // the conditions with the new values, pre(x) still the values before this iteration
    if (const int32_t st = evaluate(m, v, after); st < 0) {
      out.kind = EventOutcome::Kind::KernelFailed;
      out.kernel_status = st;
      return out;
    }
    rising_branches(m, basis, after, fired);
    for (size_t k = 0; k < m.pre_slot.size(); ++k)
      v[static_cast<size_t>(m.pre_slot[k])] = v[static_cast<size_t>(m.pre_value_slot[k])];
    if (!fired.empty()) {
      if (const int32_t st = evaluate(m, v, basis); st < 0) {
        out.kind = EventOutcome::Kind::KernelFailed;
        out.kernel_status = st;
        return out;
      }
    }
  }
  return out;
}

std::string event_iteration_cause(const CompiledModel& m, int32_t branch) {
  return fmt::format(
      "after {} iterations at this instant the assignments still make a when-condition become "
      "true ({})",
      kMaxEventIterations, m.branch_source[static_cast<size_t>(branch)].text);
}

std::string event_iteration_note(const CompiledModel& m, int32_t branch) {
  return "note: the event iteration did not end: " + event_iteration_cause(m, branch) +
         "\nhelp: a condition that an assignment of its own branch (or of a branch it makes "
         "fire) turns true again never settles; compare with pre(x), e.g. 'when x > pre(x) "
         "then'\n";
}

}  // namespace mbs::rt
