#include "predictor/ridge_fit.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace calisim::predictor {

double LinearFit::predict(std::span<const double> x) const {
  double v = intercept;
  for (std::size_t j = 0; j < weight.size(); ++j) {
    if (weight[j] == 0) continue;
    v += weight[j] * (std::clamp(x[j], lo[j], hi[j]) - mean[j]) / scale[j];
  }
  return v;
}

LinearFit fit_ridge(std::span<const double> rows, std::span<const double> y, int p, std::vector<double>* loo) {
  const auto n = static_cast<Eigen::Index>(y.size());
  if (n < 1 || p < 1 || rows.size() != static_cast<std::size_t>(n) * static_cast<std::size_t>(p)) {
    throw std::invalid_argument("fit_ridge: need at least one row and rows.size() == n * p");
  }
  using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const RowMatrix> raw(rows.data(), n, p);
  Eigen::Map<const Eigen::VectorXd> target(y.data(), n);

  LinearFit fit;
  fit.weight.assign(p, 0.0);
  fit.mean.resize(p);
  fit.scale.resize(p);
  fit.lo.resize(p);
  fit.hi.resize(p);
  Eigen::MatrixXd x(n, p);
  for (int j = 0; j < p; ++j) {
    const double mean = raw.col(j).mean();
    const double sd = std::sqrt((raw.col(j).array() - mean).square().mean());
    fit.mean[j] = mean;
    fit.lo[j] = raw.col(j).minCoeff();
    fit.hi[j] = raw.col(j).maxCoeff();
    const bool constant = !(sd > 1e-9 * std::max(1.0, std::abs(mean)));
    fit.scale[j] = constant ? 1.0 : sd;
    x.col(j) = constant ? Eigen::VectorXd::Zero(n) : Eigen::VectorXd((raw.col(j).array() - mean) / sd);
  }
  fit.intercept = target.mean();
  if (n <= 2) {
    if (loo) {
      loo->resize(n);
      for (Eigen::Index i = 0; i < n; ++i) {
        (*loo)[i] = n == 1 ? target[0] : (target.sum() - target[i]) / static_cast<double>(n - 1);
      }
    }
    return fit;
  }

  const Eigen::VectorXd yc = target.array() - fit.intercept;
  const Eigen::MatrixXd gram = x.transpose() * x;
  const Eigen::VectorXd xty = x.transpose() * yc;
  // The grid spans "almost least squares" to "almost the mean" relative to n (the diagonal of the
  // standardized Gram matrix is n).
  static constexpr double kLambdaPerRow[] = {1e-6, 1e-4, 1e-3, 3e-3, 1e-2, 3e-2, 0.1, 0.3, 1.0, 3.0};
  double best_press = std::numeric_limits<double>::infinity();
  for (double per_row : kLambdaPerRow) {
    const double lambda = per_row * static_cast<double>(n);
    Eigen::MatrixXd a = gram;
    a.diagonal().array() += lambda;
    const Eigen::LDLT<Eigen::MatrixXd> ldlt(a);
    const Eigen::VectorXd beta = ldlt.solve(xty);
    // h_ii = x_i (XᵀX + λI)⁻¹ x_iᵀ + 1/n (the unpenalized intercept).
    const Eigen::MatrixXd ainv_xt = ldlt.solve(x.transpose());
    const Eigen::VectorXd h = (x.array() * ainv_xt.transpose().array()).rowwise().sum() + 1.0 / static_cast<double>(n);
    const Eigen::VectorXd r = yc - x * beta;
    const double press = (r.array() / (1.0 - h.array()).max(1e-6)).square().sum();
    if (press < best_press) {
      best_press = press;
      fit.lambda = lambda;
      fit.loo_rmse = std::sqrt(press / static_cast<double>(n));
      for (int j = 0; j < p; ++j) fit.weight[j] = beta[j];
      if (loo) {
        loo->resize(n);
        for (Eigen::Index i = 0; i < n; ++i) (*loo)[i] = target[i] - r[i] / std::max(1.0 - h[i], 1e-6);
      }
    }
  }
  return fit;
}

}  // namespace calisim::predictor
