"""Writes the tensors of narrow-dtypes.test into the folder argv[1]: a (int8,
in int32_data as ONNX stores it), b (int4, packed two a byte in raw_data,
the first in the low nibble), and the expected c = a + b (int32)."""
import sys

from onnx import TensorProto

folder = sys.argv[1]
a = [-128, 127, 5, -5, 0, 100]
b = [-8, 7, -1, 1, 0, -3]
packed = bytes(((b[i] & 0xF) | ((b[i + 1] & 0xF) << 4)) for i in range(0, 6, 2))
tensors = {
    "a": TensorProto(name="a", data_type=3, dims=[3, 2], int32_data=a),
    "b": TensorProto(name="b", data_type=22, dims=[3, 2], raw_data=packed),
    "c": TensorProto(name="c", data_type=6, dims=[3, 2],
                     int32_data=[x + y for x, y in zip(a, b)]),
    "short_b": TensorProto(name="b", data_type=22, dims=[3, 2], raw_data=packed[:2]),
}
for name, tensor in tensors.items():
    with open(f"{folder}/{name}.pb", "wb") as f:
        f.write(tensor.SerializeToString())
