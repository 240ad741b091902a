# lit configuration for Kiln's FileCheck tests.
import os

import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")
config.excludes = ["Inputs", "onnx", "runtime", "CMakeLists.txt",
                   "lit.cfg.py", "lit.site.cfg.py.in"]

config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])

config.substitutions.append(("%testdata", config.onnx_testdata))
config.substitutions.append(("%python", config.python))
# The runtime tests' hand-built artifact (test/runtime/fake_artifact.c).
config.substitutions.append(
    ("%fake_artifact", os.path.join(config.kiln_obj_root, "test", "runtime",
                                    "libfake-artifact-valid.so")))
config.substitutions.append(
    ("%inputs", os.path.join(config.test_source_root, "Inputs")))
