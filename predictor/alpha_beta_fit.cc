#include "predictor/alpha_beta_fit.h"

#include <Eigen/Dense>

#include <stdexcept>

namespace calisim::predictor {

AlphaBetaFit fit_alpha_beta(std::span<const double> sizes, std::span<const double> times_s) {
  if (sizes.empty() || sizes.size() != times_s.size()) {
    throw std::invalid_argument("fit_alpha_beta: need equal, non-empty size and time lists");
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (!(sizes[i] > 0) || !(times_s[i] > 0)) throw std::invalid_argument("fit_alpha_beta: sizes and times must be > 0");
  }
  // Weighted rows: [1/t, s/t] · [alpha, 1/beta] ≈ 1.
  const auto n = static_cast<Eigen::Index>(sizes.size());
  Eigen::MatrixXd a(n, 2);
  for (Eigen::Index i = 0; i < n; ++i) {
    a(i, 0) = 1.0 / times_s[i];
    a(i, 1) = sizes[i] / times_s[i];
  }
  const Eigen::VectorXd ones = Eigen::VectorXd::Ones(n);
  const double smin = a.col(1).cwiseQuotient(a.col(0)).minCoeff();
  const double smax = a.col(1).cwiseQuotient(a.col(0)).maxCoeff();
  if (smax > smin * (1 + 1e-9)) {
    const Eigen::Vector2d x = a.colPivHouseholderQr().solve(ones);
    if (x[0] >= 0 && x[1] > 0) return {x[0], 1.0 / x[1]};
  }
  // Through the origin: minimise Σ (s_i/t_i · g − 1)², g = 1/beta.
  const double g = a.col(1).dot(ones) / a.col(1).squaredNorm();
  return {0.0, 1.0 / g};
}

}  // namespace calisim::predictor
