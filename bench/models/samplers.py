"""Diffusion samplers in numpy (float64), written from their papers.

The reference Kiln's compiled sampling loops (kiln-compile
--pipeline=diffusion) are checked against, and the loop the benchmark runs
ONNX Runtime in. Every sampler starts from standard normal noise and calls
denoise(x, t, labels) -> predicted noise (eps), the DDPM convention: a
linear beta schedule over TRAIN_STEPS steps, x_t = sqrt(abar_t) x_0 +
sqrt(1 - abar_t) eps.

  ddim      DDIM, eta 0 (Song et al. 2021), timesteps
            round(999 (N - i) / N), the last step to the clean latent.
  euler     Euler's method on the probability-flow ODE in sigma
            (Karras et al. 2022, sigma = sqrt((1 - abar) / abar)) over
            Karras' rho=7 sigmas between sigma(999) and sigma(0), the
            model called at the timestep whose log sigma interpolates
            sigma's, the last step to sigma 0.
  dpm++2m   DPM-Solver++(2M) (Lu et al. 2022, data prediction, multistep)
            on DDIM's timesteps, first order on the first and last steps.

guided() wraps a conditional denoiser in classifier-free guidance
(Ho & Salimans 2022): eps = u + s (c - u), u with the null label.
"""
import numpy as np

TRAIN_STEPS = 1000
BETA_START, BETA_END = 1e-4, 0.02


def alphas_cumprod():
    betas = np.linspace(BETA_START, BETA_END, TRAIN_STEPS, dtype=np.float64)
    return np.cumprod(1.0 - betas)


def even_timesteps(steps):
    # Halves round up, as in Kiln.
    return np.floor((TRAIN_STEPS - 1) * (steps - np.arange(steps)) / steps + 0.5)


def ddim(denoise, noise, steps):
    abar = alphas_cumprod()
    timesteps = even_timesteps(steps)
    x = noise.astype(np.float64)
    for i, t in enumerate(timesteps):
        a = abar[int(t)]
        a_next = abar[int(timesteps[i + 1])] if i + 1 < steps else 1.0
        eps = denoise(x, t)
        x0 = (x - np.sqrt(1 - a) * eps) / np.sqrt(a)
        x = np.sqrt(a_next) * x0 + np.sqrt(1 - a_next) * eps
    return x


def karras_sigmas(steps, rho=7.0):
    abar = alphas_cumprod()
    train_sigmas = np.sqrt((1 - abar) / abar)
    low, high = train_sigmas[0] ** (1 / rho), train_sigmas[-1] ** (1 / rho)
    ramp = np.linspace(0, 1, steps) if steps > 1 else np.zeros(1)
    sigmas = (high + ramp * (low - high)) ** rho
    log_train = np.log(train_sigmas)
    timesteps = np.interp(np.log(sigmas), log_train,
                          np.arange(TRAIN_STEPS, dtype=np.float64))
    return np.append(sigmas, 0.0), timesteps


def euler(denoise, noise, steps):
    sigmas, timesteps = karras_sigmas(steps)
    # x in sigma space: x_sigma = x_0 + sigma eps; the model sees
    # x_sigma / sqrt(1 + sigma^2).
    x = noise.astype(np.float64) * sigmas[0]
    for i, t in enumerate(timesteps):
        eps = denoise(x / np.sqrt(1 + sigmas[i] ** 2), t)
        x = x + (sigmas[i + 1] - sigmas[i]) * eps
    return x


def dpmpp_2m(denoise, noise, steps):
    abar = alphas_cumprod()
    timesteps = even_timesteps(steps)
    alpha = np.sqrt(abar[timesteps.astype(int)])
    sigma = np.sqrt(1 - abar[timesteps.astype(int)])
    lam = np.log(alpha / sigma)
    x = noise.astype(np.float64)
    previous = None
    for i, t in enumerate(timesteps):
        eps = denoise(x, t)
        x0 = (x - sigma[i] * eps) / alpha[i]
        if i + 1 == steps:
            x = x0
            break
        h = lam[i + 1] - lam[i]
        if previous is None:
            d = x0
        else:
            r = (lam[i] - lam[i - 1]) / h
            d = (1 + 1 / (2 * r)) * x0 - 1 / (2 * r) * previous
        x = sigma[i + 1] / sigma[i] * x - alpha[i + 1] * np.expm1(-h) * d
        previous = x0
    return x


SAMPLERS = {"ddim": ddim, "euler": euler, "dpm++2m": dpmpp_2m}


def guided(model, labels, null_label, scale):
    """denoise(x, t) for model(x, t, labels) with classifier-free guidance:
    one call on the batch [conditional; unconditional]."""
    both = np.concatenate([labels, np.full_like(labels, null_label)])

    def denoise(x, t):
        batch = np.concatenate([x, x])
        eps = model(batch, np.full(len(batch), t), both)
        conditional, unconditional = np.split(eps, 2)
        return unconditional + scale * (conditional - unconditional)
    return denoise
