//===- SamplerSchedule.h - a sampler's constants from its noise schedule -*- C++
//-*-===//
//
// What kiln-capture-sampler folds into a kiln.sample op: the model timestep
// of each step and the coefficients of its linear update, computed in double
// precision from a DDPM noise schedule (linear betas over the training
// steps, as DDPM, DiT and most latent diffusion models train with).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_PASSES_SAMPLERSCHEDULE_H
#define KILN_PASSES_SAMPLERSCHEDULE_H

#include "dialects/Kiln/IR/KilnOps.h"

#include <array>
#include <vector>

namespace kiln {

struct NoiseSchedule {
  int64_t trainSteps = 1000;
  double betaStart = 1e-4;
  double betaEnd = 0.02;
};

struct SamplerSchedule {
  /// x_0 = noiseScale * noise.
  double noiseScale = 1.0;
  /// The model's timestep input at each step.
  std::vector<double> timesteps;
  /// Each step's update: x' = c0 x + c1 e + c2 p, p' = c3 x + c4 e.
  std::vector<std::array<double, SampleOp::kNumCoefficients>> coefficients;
};

/// The constants of `steps` steps of `sampler` (steps >= 1, the schedule
/// valid: 0 < betaStart <= betaEnd < 1, trainSteps >= 2).
///  - ddim: deterministic DDIM (eta 0) from timestep T-1 down, the steps
///    spaced evenly ("trailing": round((T-1)(N-i)/N)), the last step to
///    the clean latent;
///  - euler: Euler's method on the probability-flow ODE in sigma, over
///    Karras et al.'s sigmas (rho 7) between the schedule's extremes, each
///    sigma's timestep interpolated in log sigma, the last step to sigma 0;
///  - dpmpp_2m: DPM-Solver++(2M) on DDIM's timesteps, first order on the
///    first and last steps.
SamplerSchedule computeSamplerSchedule(Sampler sampler, int64_t steps,
                                       const NoiseSchedule &noise);

} // namespace kiln

#endif // KILN_PASSES_SAMPLERSCHEDULE_H
