// Nothing allocates inside the step loop: a replaced global operator new counts allocations
// while steps and runs (with output to a CSV file) are timed. (C allocations inside KLU are not
// seen here; klu_refactor and klu_solve do not allocate by their documentation.)
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <string>

#include "runtime/io/CsvWriter.h"
#include "runtime/solvers/Integrator.h"
#include "tests/unit/alloc_counter.h"
#include "tests/unit/runtime_models.h"

using mbs::testalloc::g_allocations;
using mbs::testalloc::g_counting;

namespace mbs::rt {
namespace {

namespace tm = testmodels;

struct Counting {
  Counting() {
    g_allocations = 0;
    g_counting = true;
  }
  ~Counting() { g_counting = false; }
  int64_t count() const { return g_allocations.load(); }
};

TEST(NoAllocation, CounterWorks) {
  Counting c;
  // through a volatile pointer: the compiler may drop a new-expression whose delete it sees
  static double* volatile sink = nullptr;
  sink = new double(1.0);
  delete sink;
  EXPECT_EQ(c.count(), 1);
}

void expect_no_allocation_in_steps(const CompiledModel& model, SolverOptions o, int steps) {
  o.t_end = 1e6;
  auto solver = make_integrator(model, o);
  ASSERT_EQ(solver->initialize(), SolveStatus::Ok);
  ASSERT_EQ(solver->step(), SolveStatus::Ok);
  Counting c;
  for (int i = 0; i < steps; ++i) ASSERT_EQ(solver->step(), SolveStatus::Ok);
  EXPECT_EQ(c.count(), 0) << model.name;
}

TEST(NoAllocation, GenAlphaSteps) {
  expect_no_allocation_in_steps(tm::pendulum::make(), SolverOptions{}, 20000);
  expect_no_allocation_in_steps(tm::chain::make(), SolverOptions{}, 2000);  // KLU path
  expect_no_allocation_in_steps(tm::vdp::make(), SolverOptions{}, 5000);
}

TEST(NoAllocation, GenAlphaStepHalving) {
  // Steps in (0.3, 0.4) must be halved twice: the retry path allocates nothing either.
  auto model = tm::msd::make();
  model.v0[tm::msd::T_LO] = 0.3;
  model.v0[tm::msd::T_HI] = 0.4;
  model.v0[tm::msd::H_MAX] = 3e-4;
  SolverOptions o;
  auto solver = make_integrator(model, o);
  ASSERT_EQ(solver->initialize(), SolveStatus::Ok);
  Counting c;
  ASSERT_EQ(solver->run(nullptr), SolveStatus::Finished);
  EXPECT_EQ(c.count(), 0);
  EXPECT_GT(solver->statistics().rejected_steps, 0);
}

TEST(NoAllocation, Rk4Steps) {
  SolverOptions o;
  o.solver = SolverKind::Rk4;
  expect_no_allocation_in_steps(tm::msd::make(), o, 20000);
  expect_no_allocation_in_steps(tm::chain::make(), o, 2000);
}

TEST(NoAllocation, RunWithObserverWritingCsv) {
  const auto model = tm::pendulum::make();
  SolverOptions o;
  o.t_end = 5.0;
  const std::string path = (std::filesystem::temp_directory_path() / "mbs_alloc_test.csv").string();
  auto solver = make_integrator(model, o);
  ASSERT_EQ(solver->initialize(), SolveStatus::Ok);
  CsvWriter w(path, model.output_names);
  const Observer observer = [&](double t, std::span<const double> y) {
    w.write_row(t, y);
    return 0;
  };
  {
    Counting c;
    ASSERT_EQ(solver->run(observer), SolveStatus::Finished);
    EXPECT_EQ(c.count(), 0);
  }
  w.close();
  EXPECT_EQ(w.rows(), 5001);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace mbs::rt
