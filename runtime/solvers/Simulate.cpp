#include "runtime/solvers/Simulate.h"

#include "runtime/io/CsvWriter.h"
#include "runtime/io/Interrupt.h"

namespace mbs::rt {

SimulationResult simulate_to_csv(std::shared_ptr<const CompiledModel> model,
                                 const SolverOptions& options, const std::string& csv_path) {
  auto solver = make_integrator(model, options);
  CsvWriter csv(csv_path, model->output_names);
  install_interrupt_handler();
  SimulationResult result;
  result.status = solver->run([&csv](double t, std::span<const double> y) {
    csv.write_row(t, y);
    return 0;
  });
  csv.close();
  clear_interrupt();
  result.statistics = solver->statistics();
  if (const FailureRecord* f = solver->failure()) result.failure = *f;
  result.rows = csv.rows();
  return result;
}

}  // namespace mbs::rt
