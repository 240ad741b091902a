"""The two-layer MLP the quantization tests use: y = Relu(x W1 + b1) W2 + b2."""
import numpy as np
from onnx import TensorProto, helper, numpy_helper


def mlp_model(shape, w1, b1, w2, b2):
    """An opset-17 model of the MLP on a float input of `shape`."""
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
             helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
             helper.make_node("Relu", ["h1"], ["h2"], name="relu"),
             helper.make_node("MatMul", ["h2", "w2"], ["y0"], name="fc2"),
             helper.make_node("Add", ["y0", "b2"], ["y"], name="fc2_bias")]
    output_shape = list(shape[:-1]) + [w2.shape[1]]
    graph = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output_shape)],
        initializer=[numpy_helper.from_array(np.asarray(a, np.float32), n)
                     for a, n in ((w1, "w1"), (b1, "b1"), (w2, "w2"), (b2, "b2"))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
