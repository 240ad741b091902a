//===- SamplerSchedule.cpp - a sampler's constants from its noise schedule ===//
#include "passes/SamplerSchedule.h"

#include <cassert>
#include <cmath>

using namespace kiln;

namespace {

/// alpha-bar (the signal's share of the variance) at each training step.
std::vector<double> cumulativeAlphas(const NoiseSchedule &noise) {
  std::vector<double> alphas(noise.trainSteps);
  double product = 1.0;
  for (int64_t k = 0; k < noise.trainSteps; ++k) {
    double beta = noise.betaStart +
                  (noise.betaEnd - noise.betaStart) * static_cast<double>(k) /
                      static_cast<double>(noise.trainSteps - 1);
    product *= 1.0 - beta;
    alphas[k] = product;
  }
  return alphas;
}

/// round((T-1)(N-i)/N) for i < N: T-1 first, spaced evenly.
std::vector<double> trailingTimesteps(int64_t steps, int64_t trainSteps) {
  std::vector<double> timesteps(steps);
  for (int64_t i = 0; i < steps; ++i)
    timesteps[i] =
        std::round(static_cast<double>(trainSteps - 1) *
                   static_cast<double>(steps - i) / static_cast<double>(steps));
  return timesteps;
}

SamplerSchedule ddim(int64_t steps, const std::vector<double> &alphas) {
  SamplerSchedule s;
  s.timesteps = trailingTimesteps(steps, alphas.size());
  for (int64_t i = 0; i < steps; ++i) {
    double now = alphas[static_cast<size_t>(s.timesteps[i])];
    double next =
        i + 1 < steps ? alphas[static_cast<size_t>(s.timesteps[i + 1])] : 1.0;
    // x0 = (x - sqrt(1-a) e) / sqrt(a); x' = sqrt(a') x0 + sqrt(1-a') e.
    s.coefficients.push_back(
        {std::sqrt(next / now),
         std::sqrt(1.0 - next) - std::sqrt(next * (1.0 - now) / now), 0.0, 0.0,
         0.0});
  }
  return s;
}

SamplerSchedule euler(int64_t steps, const std::vector<double> &alphas) {
  std::vector<double> logSigmas(alphas.size());
  for (size_t k = 0; k < alphas.size(); ++k)
    logSigmas[k] = 0.5 * std::log((1.0 - alphas[k]) / alphas[k]);
  const double rho = 7.0;
  double maxRoot = std::exp(logSigmas.back() / rho);
  double minRoot = std::exp(logSigmas.front() / rho);
  std::vector<double> sigmas(steps + 1, 0.0);
  for (int64_t i = 0; i < steps; ++i) {
    double f = steps > 1 ? static_cast<double>(i) / (steps - 1) : 0.0;
    sigmas[i] = std::pow(maxRoot + f * (minRoot - maxRoot), rho);
  }
  SamplerSchedule s;
  for (int64_t i = 0; i < steps; ++i) {
    // log sigma grows with t: the step k whose interval holds sigma_i.
    double logSigma = std::log(sigmas[i]);
    size_t k = 0;
    while (k + 2 < logSigmas.size() && logSigmas[k + 1] < logSigma)
      ++k;
    double t = static_cast<double>(k) +
               (logSigma - logSigmas[k]) / (logSigmas[k + 1] - logSigmas[k]);
    s.timesteps.push_back(
        std::min(std::max(t, 0.0), static_cast<double>(alphas.size() - 1)));
  }
  // The state is the model's (variance-preserving) input x = alpha x_sigma,
  // alpha = 1 / sqrt(1 + sigma^2); Euler steps x_sigma' = x_sigma +
  // (sigma' - sigma) e.
  auto alphaOf = [](double sigma) {
    return 1.0 / std::sqrt(1.0 + sigma * sigma);
  };
  s.noiseScale = sigmas[0] * alphaOf(sigmas[0]);
  for (int64_t i = 0; i < steps; ++i) {
    double now = alphaOf(sigmas[i]), next = alphaOf(sigmas[i + 1]);
    s.coefficients.push_back(
        {next / now, next * (sigmas[i + 1] - sigmas[i]), 0.0, 0.0, 0.0});
  }
  return s;
}

SamplerSchedule dpmSolver2M(int64_t steps, const std::vector<double> &alphas) {
  SamplerSchedule s;
  s.timesteps = trailingTimesteps(steps, alphas.size());
  // alpha_i, sigma_i (the signal's and the noise's scale) and
  // lambda_i = log(alpha_i / sigma_i) at each step.
  std::vector<double> alpha(steps), sigma(steps), lambda(steps);
  for (int64_t i = 0; i < steps; ++i) {
    double a = alphas[static_cast<size_t>(s.timesteps[i])];
    alpha[i] = std::sqrt(a);
    sigma[i] = std::sqrt(1.0 - a);
    lambda[i] = std::log(alpha[i] / sigma[i]);
  }
  for (int64_t i = 0; i < steps; ++i) {
    // p' is this step's clean-latent estimate x0 = (x - sigma e) / alpha.
    double p3 = 1.0 / alpha[i], p4 = -sigma[i] / alpha[i];
    if (i + 1 == steps) {
      // To sigma 0: x' = x0.
      s.coefficients.push_back({p3, p4, 0.0, p3, p4});
      continue;
    }
    double h = lambda[i + 1] - lambda[i];
    double decay = sigma[i + 1] / sigma[i];
    double gain = alpha[i + 1] * (1.0 - std::exp(-h));
    // x' = decay x + gain D, D = x0 first, then (1 + 1/2r) x0 - 1/2r p
    // with r = h_{i-1} / h_i.
    double current = 1.0, previous = 0.0;
    if (i > 0) {
      double r = (lambda[i] - lambda[i - 1]) / h;
      current = 1.0 + 1.0 / (2.0 * r);
      previous = -1.0 / (2.0 * r);
    }
    s.coefficients.push_back({decay + gain * current * p3, gain * current * p4,
                              gain * previous, p3, p4});
  }
  return s;
}

} // namespace

SamplerSchedule kiln::computeSamplerSchedule(Sampler sampler, int64_t steps,
                                             const NoiseSchedule &noise) {
  assert(steps >= 1 && noise.trainSteps >= 2 && "invalid sampler schedule");
  std::vector<double> alphas = cumulativeAlphas(noise);
  switch (sampler) {
  case Sampler::Ddim:
    return ddim(steps, alphas);
  case Sampler::Euler:
    return euler(steps, alphas);
  case Sampler::DpmSolver2M:
    return dpmSolver2M(steps, alphas);
  }
  llvm_unreachable("unknown sampler");
}
