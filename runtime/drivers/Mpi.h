// Studies across machines: the runs of a study on the ranks of an MPI job (docs/studies.md,
// "Across machines: MPI"). Every rank runs the same command, compiles the model and builds the
// same Evaluator. Rank 0 then runs the study as it would on threads (the points of a variation,
// the batches of an optimiser: run_parallel() hands them to mpi_run_parallel()) but only
// coordinates: it sends each point to a worker, the next to whichever worker answers first, and
// calls `done` in its own thread. Ranks 1..N-1 are workers: mpi_serve() evaluates the points rank
// 0 sends, one at a time, until rank 0 stops them at mpi_stop(). A run computes the same numbers
// on any rank (the same code from the same values), so the results file is the same as with
// threads.
//
// Messages (MPI_BYTE, MPI_COMM_WORLD): a point is its index and values; an outcome is the index,
// status, objectives, statistics, wall time and message; stop is empty.
//
// Built without MPI (-DMBS_MPI=OFF, or libopenmpi-dev missing) the functions are stand-ins: one
// rank, never active; mpi_launcher_size() still tells that mpirun started the process, so the
// front end can say that this build cannot distribute.
#pragma once

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "runtime/drivers/Study.h"

namespace mbs::rt {

// The size and rank a launcher (mpirun/mpiexec of Open MPI or MPICH, srun with PMI) gave this
// process through its environment; 1 and 0 when no launcher started it. Read without MPI.
// (Not SLURM_NTASKS: a batch script's own mbsc sees it without being one of several ranks.)
inline int mpi_launcher_env(const char* const* names, int fallback) {
  for (const char* const* n = names; *n; ++n)
    if (const char* v = std::getenv(*n); v && *v) return std::atoi(v);
  return fallback;
}
inline int mpi_launcher_size() {
  static const char* const names[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", nullptr};
  return mpi_launcher_env(names, 1);
}
inline int mpi_launcher_rank() {
  static const char* const names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", nullptr};
  return mpi_launcher_env(names, 0);
}

#if MBS_MPI

constexpr bool mpi_available = true;

// MPI_Init_thread (funneled: only the thread that calls these functions calls MPI). Idempotent.
void mpi_start();
// MPI is running and the job has more than one rank: studies are distributed.
bool mpi_active();
int mpi_rank();  // 0 when MPI is not running
int mpi_size();  // 1 when MPI is not running

// Rank 0: run_parallel() over the workers (ranks 1..N-1) instead of threads, with the same
// contract: `done(index, outcome)` once per evaluated point, in completion order, from the calling
// thread; `skip(index)` true: not sent. After an interrupt (interrupt_requested()) no point is
// sent, the outstanding ones are collected (and passed to `done`), and it returns false. The
// workers keep serving: an optimiser sends its next batch through the next call.
bool mpi_run_parallel(const Evaluator& evaluator, const std::vector<std::vector<double>>& points,
                      const std::function<void(size_t, const RunOutcome&)>& done,
                      const std::function<bool(size_t)>& skip = nullptr);

// Ranks 1..N-1: evaluate the points rank 0 sends until it sends stop. Without an evaluator (the
// study could not be set up on this rank) every point fails with `why`.
void mpi_serve(const Evaluator* evaluator, const std::string& why = "");

// Ends MPI (MPI_Finalize) once: rank 0 first stops every worker; a worker that has not served
// (its setup failed) serves failures until rank 0 stops it, so rank 0 never waits for a rank that
// gave up. No-op when MPI is not running.
void mpi_stop();

#else  // stand-ins: one rank, never active

constexpr bool mpi_available = false;
inline void mpi_start() {}
inline bool mpi_active() {
  return false;
}
inline int mpi_rank() {
  return 0;
}
inline int mpi_size() {
  return 1;
}
inline bool mpi_run_parallel(const Evaluator& evaluator,
                             const std::vector<std::vector<double>>& points,
                             const std::function<void(size_t, const RunOutcome&)>& done,
                             const std::function<bool(size_t)>& skip = nullptr) {
  return run_parallel(evaluator, points, 0, done, skip);
}
inline void mpi_serve(const Evaluator*, const std::string& = "") {}
inline void mpi_stop() {}

#endif

// A worker rank of an active job: it serves rank 0 and writes nothing of the study.
inline bool mpi_worker() {
  return mpi_active() && mpi_rank() > 0;
}

}  // namespace mbs::rt
