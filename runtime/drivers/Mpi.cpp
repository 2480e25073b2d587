// Compiled only with MBS_MPI (CMakeLists.txt); Mpi.h has the stand-ins of a build without MPI.
#include "runtime/drivers/Mpi.h"

#include <fmt/format.h>
// the C API only: Open MPI's and MPICH's deprecated C++ bindings would need their C++ library
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <stdexcept>
#include <thread>

#include "runtime/io/Interrupt.h"

namespace mbs::rt {

namespace {

enum Tag : int { kTagPoint = 1, kTagOutcome = 2, kTagStop = 3 };

bool g_started = false, g_stopped = false;
bool g_served = false;  // a worker: rank 0 stopped it
int g_rank = 0, g_size = 1;

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(code, text, &n);
  throw std::runtime_error(fmt::format("MPI: {} failed: {}", what, std::string(text, n)));
}

// A message as bytes: plain values copied in order (every rank runs the same build).
class Message {
 public:
  template <class T>
  void put(const T& x) {
    append(&x, sizeof(T));
  }
  void put_doubles(const std::vector<double>& v) {
    put(static_cast<uint64_t>(v.size()));
    for (double x : v) put(x);
  }
  void put_string(const std::string& s) {
    put(static_cast<uint64_t>(s.size()));
    append(s.data(), s.size());
  }
  template <class T>
  T get() {
    T x;
    need(sizeof(T));
    std::memcpy(&x, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return x;
  }
  std::vector<double> get_doubles() {
    std::vector<double> v(get<uint64_t>());
    for (double& x : v) x = get<double>();
    return v;
  }
  std::string get_string() {
    const auto n = get<uint64_t>();
    need(n);
    std::string s(bytes_.data() + at_, n);
    at_ += n;
    return s;
  }

  void send(int to, int tag) const {
    check(
        MPI_Send(bytes_.data(), static_cast<int>(bytes_.size()), MPI_BYTE, to, tag, MPI_COMM_WORLD),
        "MPI_Send");
  }
  // Receives the message `status` announced (MPI_Probe/MPI_Iprobe).
  static Message receive(const MPI_Status& status) {
    int n = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &n), "MPI_Get_count");
    Message m;
    m.bytes_.resize(static_cast<size_t>(n));
    check(MPI_Recv(m.bytes_.data(), n, MPI_BYTE, status.MPI_SOURCE, status.MPI_TAG, MPI_COMM_WORLD,
                   MPI_STATUS_IGNORE),
          "MPI_Recv");
    return m;
  }

 private:
  // resize + memcpy: GCC 12 reports a false stringop-overflow for vector::insert of a few bytes
  void append(const void* p, size_t n) {
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    if (n > 0) std::memcpy(bytes_.data() + at, p, n);
  }
  void need(size_t n) const {
    if (at_ + n > bytes_.size()) throw std::runtime_error("MPI: a message ends too early");
  }
  std::vector<char> bytes_;
  size_t at_ = 0;
};

Message pack_outcome(uint64_t index, const RunOutcome& r) {
  Message m;
  m.put(index);
  m.put(static_cast<uint8_t>(r.status));
  m.put(r.ms);
  m.put_doubles(r.objectives);
#define MBS_X(name, label) m.put(r.statistics.name);
  MBS_STATISTICS_COUNTERS(MBS_X)
  MBS_STATISTICS_REALS(MBS_X)
#undef MBS_X
  m.put_string(r.message);
  return m;
}

RunOutcome unpack_outcome(Message& m, uint64_t& index) {
  RunOutcome r;
  index = m.get<uint64_t>();
  r.status = static_cast<RunOutcome::Status>(m.get<uint8_t>());
  r.ms = m.get<double>();
  r.objectives = m.get_doubles();
#define MBS_X(name, label) r.statistics.name = m.get<decltype(r.statistics.name)>();
  MBS_STATISTICS_COUNTERS(MBS_X)
  MBS_STATISTICS_REALS(MBS_X)
#undef MBS_X
  r.message = m.get_string();
  return r;
}

// Waits for a message from `source` with `tag` (MPI_ANY_*). Polls and sleeps rather than blocking
// in MPI_Probe: Open MPI's blocking calls spin at 100 % CPU, which would take a core from the
// workers when rank 0 shares a machine with them (and from the other ranks when oversubscribed).
MPI_Status wait_for(int source, int tag) {
  MPI_Status status;
  for (int polls = 0;; ++polls) {
    int flag = 0;
    check(MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, &status), "MPI_Iprobe");
    if (flag) return status;
    // the first polls spin: an answer is often there within microseconds
    if (polls > 100) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

}  // namespace

void mpi_start() {
  if (g_started) return;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  g_started = true;
}

bool mpi_active() {
  return g_started && !g_stopped && g_size > 1;
}
int mpi_rank() {
  return g_started ? g_rank : 0;
}
int mpi_size() {
  return g_started ? g_size : 1;
}

bool mpi_run_parallel(const Evaluator& evaluator, const std::vector<std::vector<double>>& points,
                      const std::function<void(size_t, const RunOutcome&)>& done,
                      const std::function<bool(size_t)>& skip) {
  (void)evaluator;  // the workers have their own, built from the same command
  size_t next = 0, outstanding = 0;
  std::exception_ptr error;
  // sends the next point that is not skipped to `worker`; false when there is none to send
  const auto send_next = [&](int worker) {
    if (error || interrupt_requested()) return false;
    while (next < points.size()) {
      const size_t i = next++;
      if (skip && skip(i)) continue;
      Message m;
      m.put(static_cast<uint64_t>(i));
      m.put_doubles(points[i]);
      m.send(worker, kTagPoint);
      ++outstanding;
      return true;
    }
    return false;
  };
  for (int w = 1; w < g_size; ++w)
    if (!send_next(w)) break;
  // dynamic load balancing: the next point goes to the worker that answered
  while (outstanding > 0) {
    const MPI_Status status = wait_for(MPI_ANY_SOURCE, kTagOutcome);
    Message m = Message::receive(status);
    --outstanding;
    uint64_t index = 0;
    const RunOutcome r = unpack_outcome(m, index);
    if (!error) {
      try {
        done(static_cast<size_t>(index), r);
      } catch (...) {
        error = std::current_exception();  // collect the outstanding outcomes, then rethrow
      }
    }
    send_next(status.MPI_SOURCE);
  }
  if (error) std::rethrow_exception(error);
  return !interrupt_requested();
}

void mpi_serve(const Evaluator* evaluator, const std::string& why) {
  if (!mpi_active() || g_rank == 0 || g_served) return;
  for (;;) {
    const MPI_Status status = wait_for(0, MPI_ANY_TAG);
    Message m = Message::receive(status);
    if (status.MPI_TAG == kTagStop) break;
    const auto index = m.get<uint64_t>();
    const std::vector<double> values = m.get_doubles();
    RunOutcome r;
    if (evaluator) {
      r = evaluator->evaluate(values);
    } else {
      r.status = RunOutcome::Status::Failed;
      r.message = why;
    }
    pack_outcome(index, r).send(0, kTagOutcome);
  }
  g_served = true;
}

void mpi_stop() {
  if (!g_started || g_stopped) return;
  if (g_size > 1) {
    if (g_rank == 0) {
      for (int w = 1; w < g_size; ++w) Message().send(w, kTagStop);
    } else if (!g_served) {
      mpi_serve(nullptr, fmt::format("rank {} could not set up the study (run the command without "
                                     "mpirun to see why)",
                                     g_rank));
    }
  }
  g_stopped = true;
  MPI_Finalize();
}

}  // namespace mbs::rt
