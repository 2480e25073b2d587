#include "runtime/drivers/Objective.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace mbs::rt {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// How far a data time may lie outside the run and still count as its first or last point: the
// grid's own end time t0 + n h carries rounding of this order.
double time_tolerance(double t) {
  return 1e-9 * std::max(1.0, std::fabs(t));
}

}  // namespace

std::string_view reduction_name(Reduction r) {
  switch (r) {
    case Reduction::Final:
      return "final";
    case Reduction::Max:
      return "max";
    case Reduction::Min:
      return "min";
    case Reduction::MaxAbs:
      return "maxabs";
    case Reduction::Mean:
      return "mean";
    case Reduction::Integral:
      return "integral";
    case Reduction::Rms:
      return "rms";
    case Reduction::L2:
      return "l2";
    case Reduction::Fit:
      return "fit";
  }
  return "?";
}

ObjectiveAccumulator::ObjectiveAccumulator(const Objective& objective)
    : objective_(&objective), x_(1 + static_cast<size_t>(std::max(0, objective.n_outputs))) {
  if (objective.pointwise.fn == nullptr || objective.pointwise.n_out != 1)
    throw std::invalid_argument("objective '" + objective.text +
                                "' has no compiled pointwise kernel");
  if (objective.reduction == Reduction::Fit &&
      objective.data_t.size() != objective.data_value.size())
    throw std::invalid_argument("objective '" + objective.text +
                                "': data times and values differ in number");
}

void ObjectiveAccumulator::reset() {
  count_ = 0;
  last_t_ = last_e_ = acc_ = 0;
  next_data_ = 0;
  data_outside_ = false;
  finite_ = true;
}

bool ObjectiveAccumulator::add(double t, std::span<const double> outputs) {
  if (outputs.size() + 1 != x_.size())
    throw std::invalid_argument(fmt::format("objective '{}' reads {} outputs, a row has {}",
                                            objective_->text, x_.size() - 1, outputs.size()));
  x_[0] = t;
  std::copy(outputs.begin(), outputs.end(), x_.begin() + 1);
  double e = kNaN;
  if (objective_->pointwise(x_.data(), &e) != 0 || !std::isfinite(e)) {
    finite_ = false;
    return false;
  }
  const bool first = count_ == 0;
  switch (objective_->reduction) {
    case Reduction::Final:
      break;
    case Reduction::Max:
      acc_ = first ? e : std::max(acc_, e);
      break;
    case Reduction::Min:
      acc_ = first ? e : std::min(acc_, e);
      break;
    case Reduction::MaxAbs:
      acc_ = first ? std::fabs(e) : std::max(acc_, std::fabs(e));
      break;
    case Reduction::Mean:
      acc_ += e;
      break;
    case Reduction::Integral:
      if (!first) acc_ += 0.5 * (t - last_t_) * (e + last_e_);
      break;
    case Reduction::Rms:
    case Reduction::L2:
      acc_ += e * e;
      break;
    case Reduction::Fit:
      add_fit(t, e);
      break;
  }
  ++count_;
  last_t_ = t;
  last_e_ = e;
  return true;
}

// The data times up to t: before the first row they lie outside the run (unless within the
// tolerance of it); after it each is interpolated linearly between the last row and this one.
void ObjectiveAccumulator::add_fit(double t, double e) {
  const std::vector<double>& dt = objective_->data_t;
  const std::vector<double>& dv = objective_->data_value;
  if (count_ == 0) {
    while (next_data_ < dt.size() && dt[next_data_] < t - time_tolerance(t)) {
      data_outside_ = true;
      ++next_data_;
    }
    while (next_data_ < dt.size() && dt[next_data_] <= t) {
      const double r = e - dv[next_data_++];
      acc_ += r * r;
    }
    return;
  }
  const double span = t - last_t_;
  while (next_data_ < dt.size() && dt[next_data_] <= t) {
    const double w = span > 0 ? (dt[next_data_] - last_t_) / span : 1.0;
    const double r = last_e_ + w * (e - last_e_) - dv[next_data_++];
    acc_ += r * r;
  }
}

bool ObjectiveAccumulator::data_outside() const {
  if (objective_->reduction != Reduction::Fit) return false;
  if (data_outside_) return true;
  const std::vector<double>& dt = objective_->data_t;
  if (count_ == 0) return !dt.empty();
  for (size_t i = next_data_; i < dt.size(); ++i)
    if (dt[i] > last_t_ + time_tolerance(last_t_)) return true;
  return false;
}

double ObjectiveAccumulator::value() const {
  if (count_ == 0 || !finite_) return kNaN;
  const double n = static_cast<double>(count_);
  switch (objective_->reduction) {
    case Reduction::Final:
      return last_e_;
    case Reduction::Max:
    case Reduction::Min:
    case Reduction::MaxAbs:
    case Reduction::Integral:
      return acc_;
    case Reduction::Mean:
      return acc_ / n;
    case Reduction::Rms:
      return std::sqrt(acc_ / n);
    case Reduction::L2:
      return std::sqrt(acc_);
    case Reduction::Fit: {
      if (data_outside()) return kNaN;
      // data times within the tolerance after the last row count as the last row
      double sum = acc_;
      const std::vector<double>& dv = objective_->data_value;
      for (size_t i = next_data_; i < dv.size(); ++i) {
        const double r = last_e_ - dv[i];
        sum += r * r;
      }
      return sum;
    }
  }
  return kNaN;
}

ObjectiveDerivative::ObjectiveDerivative(const Objective& objective, int32_t directions)
    : objective_(&objective),
      n_dir_(directions),
      x_(1 + static_cast<size_t>(std::max(0, objective.n_outputs))),
      grad_(objective.gradient_columns.size()),
      de_(static_cast<size_t>(directions)),
      prev_de_(static_cast<size_t>(directions)),
      acc_(static_cast<size_t>(directions)),
      at_extreme_(static_cast<size_t>(directions)),
      fit_(static_cast<size_t>(directions)) {
  if (!objective.gradient.fn && !objective.gradient_columns.empty())
    throw std::invalid_argument("objective '" + objective.text + "' has no gradient kernel");
}

void ObjectiveDerivative::add(double t, std::span<const double> outputs,
                              std::span<const double> d_outputs) {
  const size_t n_out = x_.size() - 1;
  x_[0] = t;
  std::copy(outputs.begin(), outputs.end(), x_.begin() + 1);
  double e = kNaN;
  objective_->pointwise(x_.data(), &e);
  if (!grad_.empty()) objective_->gradient(x_.data(), grad_.data());
  // de/d direction = sum over the outputs read of de/d output * d output / d direction
  for (int32_t k = 0; k < n_dir_; ++k) {
    double d = 0;
    for (size_t c = 0; c < grad_.size(); ++c)
      d += grad_[c] * d_outputs[static_cast<size_t>(k) * n_out +
                                static_cast<size_t>(objective_->gradient_columns[c])];
    de_[static_cast<size_t>(k)] = d;
  }
  const bool first = count_ == 0;
  const auto all = [&](auto f) {
    for (size_t k = 0; k < de_.size(); ++k) f(k);
  };
  switch (objective_->reduction) {
    case Reduction::Final:
      break;
    case Reduction::Max:
    case Reduction::Min:
    case Reduction::MaxAbs: {
      // the derivative where the extreme is (the first point reaching it, as value() does)
      const double key = objective_->reduction == Reduction::MaxAbs ? std::fabs(e) : e;
      const bool better =
          first || (objective_->reduction == Reduction::Min ? key < extreme_ : key > extreme_);
      if (better) {
        extreme_ = key;
        const double sign = objective_->reduction == Reduction::MaxAbs && e < 0 ? -1.0 : 1.0;
        all([&](size_t k) { at_extreme_[k] = sign * de_[k]; });
      }
      break;
    }
    case Reduction::Mean:
      all([&](size_t k) { acc_[k] += de_[k]; });
      break;
    case Reduction::Integral:
      if (!first) all([&](size_t k) { acc_[k] += 0.5 * (t - prev_t_) * (de_[k] + prev_de_[k]); });
      break;
    case Reduction::Rms:
    case Reduction::L2:
      sum_sq_ += e * e;
      all([&](size_t k) { acc_[k] += 2 * e * de_[k]; });  // d sum e^2
      break;
    case Reduction::Fit: {
      const std::vector<double>& dt = objective_->data_t;
      const std::vector<double>& dv = objective_->data_value;
      if (first) {
        while (next_data_ < dt.size() && dt[next_data_] < t - time_tolerance(t)) ++next_data_;
        while (next_data_ < dt.size() && dt[next_data_] <= t) {
          const double r = e - dv[next_data_++];
          all([&](size_t k) { fit_[k] += 2 * r * de_[k]; });
        }
      } else {
        const double span = t - prev_t_;
        while (next_data_ < dt.size() && dt[next_data_] <= t) {
          const double w = span > 0 ? (dt[next_data_] - prev_t_) / span : 1.0;
          const double r = prev_e_ + w * (e - prev_e_) - dv[next_data_++];
          all([&](size_t k) { fit_[k] += 2 * r * (prev_de_[k] + w * (de_[k] - prev_de_[k])); });
        }
      }
      break;
    }
  }
  ++count_;
  prev_t_ = t;
  prev_e_ = e;
  prev_de_.swap(de_);
}

double ObjectiveDerivative::value(int32_t k) const {
  if (count_ == 0 || k < 0 || k >= n_dir_) return kNaN;
  const auto i = static_cast<size_t>(k);
  const double n = static_cast<double>(count_);
  switch (objective_->reduction) {
    case Reduction::Final:
      return prev_de_[i];
    case Reduction::Max:
    case Reduction::Min:
    case Reduction::MaxAbs:
      return at_extreme_[i];
    case Reduction::Mean:
      return acc_[i] / n;
    case Reduction::Integral:
      return acc_[i];
    case Reduction::Rms: {
      const double rms = std::sqrt(sum_sq_ / n);
      return rms > 0 ? acc_[i] / n / (2 * rms) : kNaN;
    }
    case Reduction::L2: {
      const double l2 = std::sqrt(sum_sq_);
      return l2 > 0 ? acc_[i] / (2 * l2) : kNaN;
    }
    case Reduction::Fit:
      return fit_[i];
  }
  return kNaN;
}

}  // namespace mbs::rt
