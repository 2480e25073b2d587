// Studies across machines (runtime/drivers/Mpi, docs/studies.md "Across machines: MPI"): mbsc
// under mpirun on this machine (loopback) writes the same results file, byte for byte, as the
// same study on threads: a variation, a genetic optimisation with a seed, sensitivities.
// Registered only when the build has MPI (tests/CMakeLists.txt); MBS_MPIRUN is its mpirun.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/cli_test_util.h"

namespace {

using mbs::clitest::mbsc;
using mbs::clitest::slurp;
using mbs::clitest::tmp;

// 3 ranks: rank 0 distributes, 2 evaluate. As root, Open MPI needs --allow-run-as-root;
// --oversubscribe allows more ranks than cores (the test machine may have 2). Open MPI 4.1's
// defaults (shared-memory transport) work in this container; `--mca btl self,tcp` is the fallback
// where they do not (docs/studies.md).
//
// Sanitizer builds (the asan preset): Open MPI itself leaks at exit (about 1 MB in 3000
// allocations of its dlopen'ed components, unloaded before LeakSanitizer reports, so their frames
// have no module name a suppression could match), so leak detection is off for the ranks. The
// runs on threads keep it.
std::string mpirun(int ranks) {
  return std::string("ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0\" '") +
         MBS_MPIRUN + "' --allow-run-as-root --oversubscribe -np " + std::to_string(ranks) + " ";
}

const std::string kModel = "examples/mass_spring_damper.mbs";

// The study on 2 threads and on `ranks` MPI ranks: both succeed and write the same file.
void expect_same_file(const std::string& name, const std::string& study, int ranks = 3) {
  const std::string cache = "MBS_CACHE_DIR='" + tmp(name + "_cache") + "' ";
  const std::string threads_csv = tmp(name + "_threads.csv"), mpi_csv = tmp(name + "_mpi.csv");
  auto t = mbsc(kModel + " " + study + " -j 2 --quiet --output '" + threads_csv + "'", cache);
  ASSERT_EQ(t.code, 0) << t.err;
  auto m =
      mbsc(kModel + " " + study + " --quiet --output '" + mpi_csv + "'", cache + mpirun(ranks));
  ASSERT_EQ(m.code, 0) << m.err;
  // rank 0 alone prints the summary
  EXPECT_NE(m.err.find("on " + std::to_string(ranks - 1) + " MPI worker ranks"), std::string::npos)
      << m.err;
  const std::string summary = " of MassSpringDamper: ";
  EXPECT_EQ(m.err.find(summary), m.err.rfind(summary)) << m.err;
  const std::string a = slurp(threads_csv), b = slurp(mpi_csv);
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, b) << "threads:\n" << a << "\nMPI:\n" << b;
}

TEST(Mpi, VariationWritesTheSameFileAsThreads) {
  expect_same_file("variation",
                   "--vary k=50:200:8 --vary d=0.1,0.4,1.6 --objective 'maxabs(x)' "
                   "--objective 'integral(x^2)' --t-end 2");
}

TEST(Mpi, GeneticOptimisationWithASeedWritesTheSameFileAsThreads) {
  expect_same_file("genetic",
                   "--optimize genetic --range k=50:200 --range d=0.05:2 "
                   "--objective 'integral(x^2)' --seed 7 --initial-population 20 --population 10 "
                   "--generations 4 --t-end 2");
}

TEST(Mpi, SensitivitiesWriteTheSameFileAsThreads) {
  // more ranks than points in a batch: some workers get nothing
  expect_same_file("sensitivity",
                   "--sensitivity k --sensitivity d --sensitivity-method fd --objective "
                   "'integral(x^2)' --t-end 2",
                   7);
}

TEST(Mpi, ErrorsArePrintedOnceAndEveryRankEnds) {
  auto m = mbsc(kModel + " --vary k=1,2 --objective 'maximum(x)' --output '" + tmp("bad.csv") + "'",
                mpirun(3));
  EXPECT_NE(m.code, 0);
  const std::string what = "unknown reduction 'maximum'";
  ASSERT_NE(m.err.find(what), std::string::npos) << m.err;
  EXPECT_EQ(m.err.find(what), m.err.rfind(what)) << m.err;  // rank 0's diagnostics only
}

}  // namespace
