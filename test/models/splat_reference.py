"""A float64 numpy reference of the 3D Gaussian splatting rasterizer.

The algorithm is the reference 3DGS rasterizer's (Kerbl et al. 2023,
diff-gaussian-rasterization's forward pass), written here from its
description with the camera given as a view matrix and pinhole intrinsics:

- projection: a Gaussian whose camera-space depth is 0.2 or less is culled.
  Its pixel mean is (fx x / z + cx, fy y / z + cy); pixel centres lie at
  integer coordinates. The 2D covariance is J W S R R^T S^T W^T J^T with the
  Jacobian taken at the mean clamped to 1.3 times the half field of view
  (tan = width / (2 fx), height / (2 fy)), plus 0.3 on the diagonal. A
  singular one culls the Gaussian. Its radius is ceil(3 sqrt(l)), l the
  larger eigenvalue (the discriminant at least 0.1).
- binning: 16x16 tiles; the Gaussian covers the tiles of the square of its
  radius around its mean (truncated to tile indices as the reference does);
  one that covers no tile is culled. Each tile's Gaussians are in increasing
  depth (ties by index).
- colour: real spherical harmonics of degree 0-3 in the direction from the
  camera centre to the mean, plus 0.5, clamped at 0. Opacity: the sigmoid of
  the stored logit; scales: exp of the stored logs; rotation: the normalized
  quaternion (w, x, y, z).
- blending, front to back per pixel: power = -(a dx^2 + c dy^2) / 2 - b dx dy
  with (a, b, c) the inverse covariance and d the mean minus the pixel; a
  positive power is skipped; alpha = min(0.99, opacity exp(power)) is
  skipped below 1/255; a Gaussian that would take the transmittance T below
  1e-4 ends the pixel without contributing; otherwise colour += c alpha T and
  T *= 1 - alpha. The pixel is colour + T background.

`render` also marks the pixels that a decision within float32 rounding of
its threshold may change (`CLOSE`: the distances, absolute but for the
depths' relative one): a float32 render may differ from this one there by
a skipped or added splat, or two splats of nearly equal depth blended in
the other order.
"""
import numpy as np

TILE = 16
NEAR = 0.2
ALPHA_MIN = 1.0 / 255.0
ALPHA_MAX = 0.99
T_MIN = 1e-4

SH_C0 = 0.28209479177387814
SH_C1 = 0.4886025119029199
SH_C2 = (1.0925484305920792, -1.0925484305920792, 0.31539156525252005,
         -1.0925484305920792, 0.5462742152960396)
SH_C3 = (-0.5900435899266435, 2.890611442640554, -0.4570457994644658,
         0.3731763325901154, -0.4570457994644658, 1.445305721320277,
         -0.5900435899266435)


def sh_basis(d, coefficients):
    """The real SH basis of degree sqrt(coefficients) - 1 at unit
    directions d ([N, 3]), in the 3DGS order and signs: [N, coefficients]."""
    x, y, z = d[:, 0], d[:, 1], d[:, 2]
    xx, yy, zz = x * x, y * y, z * z
    basis = [np.full_like(x, SH_C0)]
    if coefficients > 1:
        basis += [-SH_C1 * y, SH_C1 * z, -SH_C1 * x]
    if coefficients > 4:
        basis += [SH_C2[0] * x * y, SH_C2[1] * y * z,
                  SH_C2[2] * (2 * zz - xx - yy), SH_C2[3] * x * z,
                  SH_C2[4] * (xx - yy)]
    if coefficients > 9:
        basis += [SH_C3[0] * y * (3 * xx - yy), SH_C3[1] * x * y * z,
                  SH_C3[2] * y * (4 * zz - xx - yy),
                  SH_C3[3] * z * (2 * zz - 3 * xx - 3 * yy),
                  SH_C3[4] * x * (4 * zz - xx - yy),
                  SH_C3[5] * z * (xx - yy), SH_C3[6] * x * (xx - 3 * yy)]
    return np.stack(basis, 1)


def rotations(q):
    """Rotation matrices [N, 3, 3] of quaternions (w, x, y, z), normalized."""
    q = q / np.linalg.norm(q, axis=1, keepdims=True)
    w, x, y, z = q[:, 0], q[:, 1], q[:, 2], q[:, 3]
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - w * z),
                  2 * (x * z + w * y)], 1),
        np.stack([2 * (x * y + w * z), 1 - 2 * (x * x + z * z),
                  2 * (y * z - w * x)], 1),
        np.stack([2 * (x * z - w * y), 2 * (y * z + w * x),
                  1 - 2 * (x * x + y * y)], 1)], 1)


# How near its threshold a decision is taken as one that float32 rounding
# may flip: the radius's extent near a whole pixel, the depth near the near
# plane, alpha near 1/255, the transmittance near 1e-4, the power near 0.
CLOSE = {"radius": 1e-3, "near plane": 1e-4, "alpha": 1e-6,
         "transmittance": 1e-8, "power": 1e-5, "depth": 3e-7}
# Two Gaussians of close depths change a pixel by less than this when
# blended in the other order: too little to mark it.
SWAP_TOLERANCE = 1e-5


def tile_rectangles(mean, radius, width, height):
    """The tiles [N, 4] (x0, y0, x1, y1; exclusive ends) of the squares of
    `radius` around `mean`, truncated to tile indices as the reference
    rasterizer does."""
    tiles_x = (width + TILE - 1) // TILE
    tiles_y = (height + TILE - 1) // TILE

    def tile_index(value, limit):
        return np.minimum(limit, np.maximum(0, np.trunc(value / TILE)))

    return np.stack([tile_index(mean[:, 0] - radius, tiles_x),
                     tile_index(mean[:, 1] - radius, tiles_y),
                     tile_index(mean[:, 0] + radius + TILE - 1, tiles_x),
                     tile_index(mean[:, 1] + radius + TILE - 1, tiles_y)],
                    1).astype(np.int64)


def project(scene, view, intrinsics, width, height):
    """Per Gaussian: mean [N, 2], conic [N, 3], depth [N], radius [N]
    (0: culled), colour [N, 3], opacity [N], tile rectangle [N, 4]
    (x0, y0, x1, y1, exclusive ends), whether its radius is a close call
    [N] and the rectangles of the radii either side of it, whether its
    depth is [N]."""
    p = scene["positions"].astype(np.float64)
    n = len(p)
    r_view, t_view = view[:3, :3].astype(np.float64), view[:3, 3]
    fx, fy, cx, cy = (float(v) for v in intrinsics)
    cam = p @ r_view.T + t_view
    tx, ty, tz = cam[:, 0], cam[:, 1], cam[:, 2]
    near = np.abs(tz - NEAR) < CLOSE["near plane"]
    visible = tz > NEAR
    tz_safe = np.where(visible, tz, 1.0)
    mean = np.stack([fx * tx / tz_safe + cx, fy * ty / tz_safe + cy], 1)

    rot = rotations(scene["rotations"].astype(np.float64))
    scale = np.exp(scene["log_scales"].astype(np.float64))
    m = rot * scale[:, None, :]
    sigma = m @ m.transpose(0, 2, 1)
    lim_x = 1.3 * 0.5 * width / fx
    lim_y = 1.3 * 0.5 * height / fy
    jx = np.clip(tx / tz_safe, -lim_x, lim_x) * tz_safe
    jy = np.clip(ty / tz_safe, -lim_y, lim_y) * tz_safe
    jac = np.zeros((n, 2, 3))
    jac[:, 0, 0] = fx / tz_safe
    jac[:, 0, 2] = -fx * jx / tz_safe ** 2
    jac[:, 1, 1] = fy / tz_safe
    jac[:, 1, 2] = -fy * jy / tz_safe ** 2
    t = jac @ r_view
    cov = t @ sigma @ t.transpose(0, 2, 1)
    a = cov[:, 0, 0] + 0.3
    b = cov[:, 0, 1]
    c = cov[:, 1, 1] + 0.3
    det = a * c - b * b
    visible &= det != 0
    det_safe = np.where(det != 0, det, 1.0)
    conic = np.stack([c / det_safe, -b / det_safe, a / det_safe], 1)
    mid = 0.5 * (a + c)
    root = np.sqrt(np.maximum(0.1, mid * mid - det))
    extent = 3 * np.sqrt(np.maximum(mid + root, mid - root))
    close = visible & (np.abs(extent - np.round(extent)) < CLOSE["radius"])
    radius = np.ceil(extent)

    rect = tile_rectangles(mean, radius, width, height)
    visible &= (rect[:, 2] - rect[:, 0]) * (rect[:, 3] - rect[:, 1]) > 0
    radius = np.where(visible, radius, 0.0)
    # The tiles a radius one pixel larger adds to those of one a pixel
    # smaller: where a radius that is a close call changes the binning.
    low = tile_rectangles(mean, np.ceil(extent - CLOSE["radius"]), width,
                          height)
    high = tile_rectangles(mean, np.ceil(extent + CLOSE["radius"]), width,
                           height)

    r_inv = r_view.T
    centre = -r_inv @ t_view
    direction = p - centre
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    sh = scene["sh"].astype(np.float64)
    colour = np.einsum("nk,nkc->nc", sh_basis(direction, sh.shape[1]), sh)
    colour += 0.5
    colour = np.maximum(colour, 0.0)
    opacity = 1.0 / (1.0 + np.exp(-scene["opacity_logits"].astype(np.float64)))
    return dict(mean=mean, conic=conic, depth=tz, radius=radius,
                colour=colour, opacity=opacity, rect=rect, close=close,
                rect_low=low, rect_high=high, near=near)


def render(scene, view, intrinsics, width, height, background):
    """The image [height, width, 3], the Gaussian-tile pair count and the
    pixels a close call may change [height, width]."""
    image, pairs, fragile, _, _ = _blend(scene, view, intrinsics, width,
                                         height, background)
    return image, pairs, fragile


def contributions(scene, view, intrinsics, width, height):
    """Each Gaussian's blending weight alpha T summed over the image's
    pixels [N], and a bound on how much close calls may change it [N]: its
    alpha summed over the pixels where a decision up to its turn was close
    (a flip changes its weight by at most alpha)."""
    _, _, _, weights, bound = _blend(scene, view, intrinsics, width, height,
                                     np.zeros(3))
    return weights, bound


def _blend(scene, view, intrinsics, width, height, background):
    g = project(scene, view, intrinsics, width, height)
    order = np.argsort(g["depth"], kind="stable")
    order = order[g["radius"][order] > 0]
    # A Gaussian whose depth lies within float32 rounding (relative) of the
    # one before it may blend before it: its predecessor, else -1.
    sorted_depth = g["depth"][order]
    tie = np.abs(np.diff(sorted_depth)) < CLOSE["depth"] * sorted_depth[1:]
    tied_after = np.full(len(g["depth"]), -1)
    tied_after[order[1:][tie]] = order[:-1][tie]
    tiles_x = (width + TILE - 1) // TILE
    tiles_y = (height + TILE - 1) // TILE
    image = np.zeros((tiles_y * TILE, tiles_x * TILE, 3))
    fragile = np.zeros((tiles_y * TILE, tiles_x * TILE), bool)
    weights = np.zeros(len(g["depth"]))
    bound = np.zeros(len(g["depth"]))
    for i in np.flatnonzero(g["near"]):
        x0, y0, x1, y1 = g["rect"][i]
        fragile[y0 * TILE:y1 * TILE, x0 * TILE:x1 * TILE] = True
    for i in np.flatnonzero(g["close"]):
        x0, y0, x1, y1 = g["rect_high"][i]
        changed = np.zeros((tiles_y, tiles_x), bool)
        changed[y0:y1, x0:x1] = True
        x0, y0, x1, y1 = g["rect_low"][i]
        changed[y0:y1, x0:x1] = False
        fragile |= np.kron(changed, np.ones((TILE, TILE), bool))
    background = np.asarray(background, np.float64)
    pairs = 0
    for ty in range(tiles_y):
        for tx in range(tiles_x):
            rect = g["rect"][order]
            members = order[(rect[:, 0] <= tx) & (tx < rect[:, 2]) &
                            (rect[:, 1] <= ty) & (ty < rect[:, 3])]
            pairs += len(members)
            py, px = np.mgrid[ty * TILE:(ty + 1) * TILE,
                              tx * TILE:(tx + 1) * TILE]
            px, py = px.ravel().astype(np.float64), py.ravel().astype(np.float64)
            inside = (px < width) & (py < height)
            t = np.ones(TILE * TILE)
            colour = np.zeros((TILE * TILE, 3))
            live = np.ones(TILE * TILE, bool)
            close = fragile[ty * TILE:(ty + 1) * TILE,
                            tx * TILE:(tx + 1) * TILE].ravel().copy()
            previous = -1
            for i in members:
                dx, dy = g["mean"][i, 0] - px, g["mean"][i, 1] - py
                a, b, c = g["conic"][i]
                power = -0.5 * (a * dx * dx + c * dy * dy) - b * dx * dy
                alpha = np.minimum(ALPHA_MAX, g["opacity"][i] * np.exp(power))
                use = live & (power <= 0) & (alpha >= ALPHA_MIN)
                after = t * (1 - alpha)
                close |= live & ((np.abs(power) < CLOSE["power"]) |
                                 (np.abs(alpha - ALPHA_MIN) < CLOSE["alpha"]))
                close |= use & (np.abs(after - T_MIN) < CLOSE["transmittance"])
                if tied_after[i] >= 0 and tied_after[i] == previous:
                    # Blended the other way round, the pair changes the
                    # pixel by T alpha_j alpha_i |colour_j - colour_i|.
                    swing = (previous_t * previous_alpha * alpha *
                             np.abs(g["colour"][i] -
                                    g["colour"][previous]).max())
                    close |= use & previous_use & (swing > SWAP_TOLERANCE)
                bound[i] += alpha[close & inside].sum()
                ends = use & (after < T_MIN)
                live &= ~ends
                use &= ~ends
                previous, previous_use = i, use
                previous_t, previous_alpha = t, alpha
                weights[i] += (alpha * t)[use & inside].sum()
                colour[use] += g["colour"][i] * (alpha[use] * t[use])[:, None]
                t = np.where(use, after, t)
            pixels = colour + t[:, None] * background
            image[ty * TILE:(ty + 1) * TILE, tx * TILE:(tx + 1) * TILE] = \
                pixels.reshape(TILE, TILE, 3)
            fragile[ty * TILE:(ty + 1) * TILE, tx * TILE:(tx + 1) * TILE] |= \
                close.reshape(TILE, TILE)
    return (image[:height, :width], pairs, fragile[:height, :width], weights,
            bound)
