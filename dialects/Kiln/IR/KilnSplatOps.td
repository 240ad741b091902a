//===- KilnSplatOps.td - Gaussian splatting ops ------------*- tablegen -*-===//
//
// A 3D Gaussian splatting renderer as two ops: kiln.splat_project turns
// each Gaussian into a screen-space splat (data-parallel over Gaussians),
// kiln.splat_rasterize bins the splats into 16x16 tiles, orders each tile's
// by depth and blends them front to back (parallel over tiles).
// kiln.splat_contributions blends the same way and measures each splat's
// share of the image instead. The
// algorithm is the reference 3DGS rasterizer's; docs/splatting.md gives it
// in full.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_SPLAT_OPS
#define KILN_DIALECT_KILN_SPLAT_OPS

def Kiln_SplatProjectOp : Kiln_Op<"splat_project", [Pure]> {
  let summary = "project 3D Gaussians to screen-space splats";
  let description = [{
    Projects `N` Gaussians through a pinhole camera: `view` ([4, 4], world
    to camera, camera z forward, y down) and `intrinsics` (`fx, fy, cx,
    cy`, in pixels; pixel centres at integer coordinates) for an image of
    `width` x `height` pixels, or, with `size(%height, %width)`, of the
    size those index values give at run time, at most `width` x `height`
    (the caller checks the bound). A Gaussian has a mean (`positions`, [N, 3]),
    log scales (`log_scales`, [N, 3]), a rotation (`rotations`, [N, 4], a
    quaternion w, x, y, z of any non-zero length), an opacity logit
    (`opacity_logits`, [N]) and spherical-harmonics colour coefficients
    (`sh`, [N, K, 3] with K = 1, 4, 9 or 16: degree 0 to 3). The log
    scales, rotations, opacity logits and SH may be float16, stored at half
    the bytes and widened to float32 as the projection reads them, or
    int8: each column c (of the trailing dims, row-major) of each int8
    attribute, in operand order, reads as `int8_scales[c] * q +
    int8_offsets[c]` (one rounding: a fused multiply-add).

    `splats` is [11, N], one row per field, so that each field is
    contiguous: 0-1 the mean in pixels (x, y); 2-4 the inverse of the 2D
    covariance (a, b, c, for a x^2 + 2 b x y + c y^2); 5 the camera depth;
    6 the radius in pixels, ceil(3 sigma) of the larger axis, 0 for a
    Gaussian that is culled (depth 0.2 or less, or a singular covariance);
    7 the opacity (sigmoid of the logit); 8-10 the colour (SH evaluated in
    the direction from the camera centre, plus 0.5, clamped at 0).

    ```mlir
    %splats = kiln.splat_project %pos, %scales, %rot, %opacity, %sh, %view, %k width = 640 height = 480 : tensor<1000x3xf32>, tensor<1000x3xf32>, tensor<1000x4xf32>, tensor<1000xf32>, tensor<1000x16x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x1000xf32>
    %sized = kiln.splat_project %pos, %scales, %rot, %opacity, %sh, %view, %k width = 640 height = 480 size(%h, %w) : tensor<1000x3xf32>, tensor<1000x3xf32>, tensor<1000x4xf32>, tensor<1000xf32>, tensor<1000x16x3xf32>, tensor<4x4xf32>, tensor<4xf32> -> tensor<11x1000xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$positions,
                       Kiln_SplatAttributeTensor:$log_scales,
                       Kiln_SplatAttributeTensor:$rotations,
                       Kiln_SplatAttributeTensor:$opacity_logits,
                       Kiln_SplatAttributeTensor:$sh, Kiln_FloatTensor:$view,
                       Kiln_FloatTensor:$intrinsics, I64Attr:$width,
                       I64Attr:$height, Variadic<Index>:$image_size,
                       OptionalAttr<DenseF32ArrayAttr>:$int8_scales,
                       OptionalAttr<DenseF32ArrayAttr>:$int8_offsets);
  let results = (outs Kiln_FloatTensor:$splats);
  let assemblyFormat = [{
    $positions `,` $log_scales `,` $rotations `,` $opacity_logits `,` $sh `,`
    $view `,` $intrinsics `width` `=` $width `height` `=` $height
    (`size` `(` $image_size^ `)`)? attr-dict
    `:` type($positions) `,` type($log_scales) `,` type($rotations) `,`
    type($opacity_logits) `,` type($sh) `,` type($view) `,`
    type($intrinsics) `->` type($splats)
  }];
  let hasVerifier = 1;
}

def Kiln_SplatRasterizeOp : Kiln_Op<"splat_rasterize", [Pure]> {
  let summary = "bin splats into tiles, sort them by depth and blend them";
  let description = [{
    Renders the splats of kiln.splat_project ([11, N]) into an image
    [H, W, 3]. A splat covers the 16x16 tiles of the square of its radius
    around its mean; one with radius 0, or covering no tile, is culled.
    Each tile's splats are taken in increasing depth (ties in index order)
    and each pixel blends them front to back: with d the mean minus the
    pixel, power = -(a dx^2 + c dy^2) / 2 - b dx dy; a splat with a positive
    power, or with alpha = min(0.99, opacity exp(power)) below 1/255, is
    skipped; one that would take the transmittance T below 1e-4 ends the
    pixel; otherwise colour += alpha T rgb and T *= 1 - alpha. The pixel is
    colour + T background (`background`, [3]).

    `culling` says which of the square's tiles get the splat: `square`
    all of them (the reference rasterizer's binning), `exact` only those
    where some pixel centre can reach alpha 1/255: those inside the
    ellipse where the splat's opacity times its Gaussian is 1/255 (with a
    margin for float rounding), tested exactly against each tile's pixel
    centres. A tile left out would have skipped the splat at every pixel,
    so the image is the same.

    With `size(%height, %width)` the image is of the size those index
    values give at run time, at most `max_size` = [height, width] (the
    caller checks the bound), and the result's first two dims are dynamic.

    ```mlir
    %image = kiln.splat_rasterize %splats, %background : tensor<11x1000xf32>, tensor<3xf32> -> tensor<480x640x3xf32>
    %fast = kiln.splat_rasterize %splats, %background culling = exact : tensor<11x1000xf32>, tensor<3xf32> -> tensor<480x640x3xf32>
    %sized = kiln.splat_rasterize %splats, %background size(%h, %w) max_size = [480, 640] : tensor<11x1000xf32>, tensor<3xf32> -> tensor<?x?x3xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$splats,
                       Kiln_FloatTensor:$background,
                       Variadic<Index>:$image_size,
                       OptionalAttr<DenseI64ArrayAttr>:$max_size,
                       DefaultValuedAttr<Kiln_SplatCullingAttr,
                                         "::kiln::SplatCulling::Square">:$culling);
  let results = (outs Kiln_FloatTensor:$image);
  let assemblyFormat = [{
    $splats `,` $background
    (`size` `(` $image_size^ `)` `max_size` `=` $max_size)?
    (`culling` `=` $culling^)? attr-dict `:`
    type($splats) `,` type($background) `->` type($image)
  }];
  let hasVerifier = 1;
}

def Kiln_SplatContributionsOp : Kiln_Op<"splat_contributions", [Pure]> {
  let summary = "each splat's blending weight summed over an image";
  let description = [{
    Blends the splats of kiln.splat_project ([11, N]) as
    kiln.splat_rasterize would for an image of `width` x `height` pixels,
    and returns, for each splat, the weight it blends with (alpha T, the
    share of its colour in the pixel) summed over the pixels: [N], 0 for a
    splat that is culled or blends nowhere. A splat's total over a set of
    views ranks how much the scene needs it, which pruning uses.
    `culling` bins as kiln.splat_rasterize's does; the sums do not depend
    on it. With `size(%height, %width)` the image is of that size, at most
    `width` x `height`, as for kiln.splat_project.

    ```mlir
    %weights = kiln.splat_contributions %splats width = 640 height = 480 culling = exact : tensor<11x1000xf32> -> tensor<1000xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$splats, I64Attr:$width,
                       I64Attr:$height, Variadic<Index>:$image_size,
                       DefaultValuedAttr<Kiln_SplatCullingAttr,
                                         "::kiln::SplatCulling::Square">:$culling);
  let results = (outs Kiln_FloatTensor:$contributions);
  let assemblyFormat = [{
    $splats `width` `=` $width `height` `=` $height
    (`size` `(` $image_size^ `)`)? (`culling` `=` $culling^)? attr-dict `:` type($splats) `->`
    type($contributions)
  }];
  let hasVerifier = 1;
}

#endif // KILN_DIALECT_KILN_SPLAT_OPS
