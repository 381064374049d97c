// Ridge regression with the penalty chosen by exact leave-one-out error, and a prediction that
// never leaves the data it was fitted on.
//
// fit_ridge standardizes each feature column (mean 0, unit variance; a column constant over the
// rows gets weight 0), solves (XᵀX + λI)β = Xᵀy for every λ of a fixed grid with Eigen's LDLT,
// and keeps the λ with the smallest PRESS statistic Σ (r_i / (1 − h_ii))², the exact
// leave-one-out residual of a linear smoother. The intercept (the mean of y) is not penalized.
//
// LinearFit::predict clamps every feature to the [min, max] it had in the fitted rows before
// applying the weights, so a shape outside the data is answered like the nearest edge of the data
// instead of by extrapolating a polynomial (the callers add the physics that does extrapolate:
// roofline and quantization). Pure value type; predict does not allocate.
#pragma once

#include <span>
#include <vector>

namespace calisim::predictor {

struct LinearFit {
  double intercept = 0;
  std::vector<double> weight;        // per standardized feature
  std::vector<double> mean, scale;   // standardization of each feature
  std::vector<double> lo, hi;        // feature range seen in the fit
  double lambda = 0;                 // chosen penalty
  double loo_rmse = 0;               // leave-one-out RMSE of y at that penalty

  // x must have weight.size() entries.
  double predict(std::span<const double> x) const;
};

// rows: n rows of p features each (row-major, n·p values); y: n targets. Requires n >= 1 and
// rows.size() == n·p; throws std::invalid_argument otherwise. With n <= 2 the fit is the mean.
// When `loo` is given it receives, per row, the exact leave-one-out prediction of y at the chosen
// penalty (y_i − r_i / (1 − h_ii); with n <= 2 the mean of the other rows).
LinearFit fit_ridge(std::span<const double> rows, std::span<const double> y, int p,
                    std::vector<double>* loo = nullptr);

}  // namespace calisim::predictor
