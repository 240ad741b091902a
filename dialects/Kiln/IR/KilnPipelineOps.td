//===- KilnPipelineOps.td - loops around a model ------------*- tablegen -*-===//
//
// The loop an application runs around an exported model, captured in the
// dialect so passes see across its iterations: a diffusion sampler calling
// its denoiser once per step. The region holds one call's worth of the
// model; the op's attributes hold what the sampler folds at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_DIALECT_KILN_PIPELINE_OPS
#define KILN_DIALECT_KILN_PIPELINE_OPS


def Kiln_Sampler : I32EnumAttr<"Sampler", "diffusion sampler", [
    I32EnumAttrCase<"Ddim", 0, "ddim">,
    I32EnumAttrCase<"Euler", 1, "euler">,
    I32EnumAttrCase<"DpmSolver2M", 2, "dpmpp_2m">]> {
  let cppNamespace = "::kiln";
  let genSpecializedAttr = 0;
}

def Kiln_SamplerAttr : EnumAttr<Kiln_Dialect, Kiln_Sampler, "sampler"> {
  let assemblyFormat = "`` $value";
}

def Kiln_SampleOp : Kiln_Op<"sample", [
    SingleBlock, RecursiveMemoryEffects,
    AllTypesMatch<["noise", "result"]>]> {
  let summary = "a diffusion sampler's loop over its denoiser";
  let description = [{
    Runs `steps` denoising steps from `noise` and returns the final latent.
    The region is one step's model evaluation: it receives the current
    latent `x`, the step's model timestep `t` (a scalar taken from
    `timesteps`) and the step's index, and yields the predicted noise `e`
    (classifier-free guidance, when asked for, is inside it). The update
    is linear in what the step knows, with the coefficients of row i of
    `coefficients` (`[steps, 5]`), folded at compile time from the
    sampler's noise schedule:

    ```
    x_0 = noise_scale * noise,  p_0 = 0
    x_{i+1} = c0 x_i + c1 e_i + c2 p_i      p_{i+1} = c3 x_i + c4 e_i
    ```

    `p` is the previous step's estimate of the clean latent, which a
    multistep sampler (DPM-Solver++(2M)) combines with the current one;
    single-step samplers (DDIM, Euler) leave its columns zero. `sampler`
    records which sampler the coefficients come from.

    `carry` values pass from step to step: each starts as the operand,
    the region receives the current ones after the step index and yields
    the next ones after the prediction (a feature cache that a caching
    pass keeps across steps).

    ```mlir
    %s = kiln.sample ddim %noise noise_scale = 1.0
        timesteps = dense<[999.0, 499.0]> : tensor<2xf32>
        coefficients = dense<...> : tensor<2x5xf32> : tensor<1x4x32x32xf32> {
    ^bb0(%x: tensor<1x4x32x32xf32>, %t: tensor<f32>, %i: index):
      %e = ... : tensor<1x4x32x32xf32>
      kiln.yield %e : tensor<1x4x32x32xf32>
    }
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$noise, Variadic<Kiln_Tensor>:$carried,
                       Kiln_SamplerAttr:$sampler,
                       F32Attr:$noise_scale, FloatElementsAttr<32>:$timesteps,
                       FloatElementsAttr<32>:$coefficients);
  let results = (outs Kiln_FloatTensor:$result);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sampler $noise (`carry` `(` $carried^ `:` type($carried) `)`)?
    `noise_scale` `=` $noise_scale `timesteps` `=` $timesteps
    `coefficients` `=` $coefficients attr-dict `:` type($noise) $body
  }];
  let extraClassDeclaration = [{
    /// The number of denoising steps.
    int64_t getNumSteps() {
      return ::llvm::cast<::mlir::ShapedType>(getTimesteps().getType())
          .getNumElements();
    }
    /// The number of coefficients of each step's update.
    static constexpr int64_t kNumCoefficients = 5;
  }];
  let hasRegionVerifier = 1;
}

def Kiln_YieldOp : Kiln_Op<"yield", [
    Pure, Terminator, HasParent<"::kiln::SampleOp">]> {
  let summary = "the predicted noise of one sampling step";
  let description = [{
    Ends a `kiln.sample` region with the step's noise prediction, then the
    values the op carries to the next step.

    ```mlir
    kiln.yield %e : tensor<1x4x32x32xf32>
    kiln.yield %e, %cache : tensor<1x4x32x32xf32>, tensor<2x256x384xf32>
    ```
  }];
  let arguments = (ins Kiln_FloatTensor:$value, Variadic<Kiln_Tensor>:$carried);
  let assemblyFormat = [{
    $value (`,` $carried^)? attr-dict `:` type($value) (`,` type($carried)^)?
  }];
}

#endif // KILN_DIALECT_KILN_PIPELINE_OPS
