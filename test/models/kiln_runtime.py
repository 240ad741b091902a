"""Kiln's C runtime (include/kiln/runtime.h) from Python, through ctypes.

For tests and benchmarks that drive an artifact call by call (a decoder's
session state across steps); numpy arrays in and out.
"""
import ctypes
import os

import numpy as np

# kiln_dtype (include/kiln/abi.h), the values of ONNX's TensorProto types.
_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16,
          6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16}
_DTYPES = {np.dtype(t): code for code, t in _NUMPY.items()}


class KilnError(RuntimeError):
    def __init__(self, status, message):
        super().__init__(message)
        self.status = status


class Runtime:
    def __init__(self, library):
        lib = ctypes.CDLL(library)
        p = ctypes.c_void_p
        lib.kiln_last_error.restype = ctypes.c_char_p
        lib.kiln_artifact_open.argtypes = [ctypes.c_char_p, ctypes.POINTER(p)]
        lib.kiln_artifact_close.argtypes = [p]
        lib.kiln_artifact_find_entry.argtypes = [p, ctypes.c_char_p,
                                                 ctypes.POINTER(ctypes.c_int32)]
        lib.kiln_session_create.argtypes = [p, ctypes.POINTER(p)]
        lib.kiln_session_destroy.argtypes = [p]
        lib.kiln_session_reset.argtypes = [p]
        lib.kiln_session_set_num_threads.argtypes = [p, ctypes.c_int32]
        lib.kiln_session_run.argtypes = [p, ctypes.c_int32, ctypes.POINTER(p),
                                         ctypes.c_int32, ctypes.POINTER(p),
                                         ctypes.c_int32]
        lib.kiln_tensor_create.argtypes = [ctypes.c_int32, ctypes.c_int32,
                                           ctypes.POINTER(ctypes.c_int64),
                                           ctypes.POINTER(p)]
        lib.kiln_tensor_destroy.argtypes = [p]
        lib.kiln_tensor_dtype.argtypes = [p]
        lib.kiln_tensor_rank.argtypes = [p]
        lib.kiln_tensor_dims.argtypes = [p]
        lib.kiln_tensor_dims.restype = ctypes.POINTER(ctypes.c_int64)
        lib.kiln_tensor_data.argtypes = [p]
        lib.kiln_tensor_data.restype = p
        lib.kiln_generate_options_init.argtypes = [p]
        lib.kiln_session_generate.argtypes = [
            p, ctypes.POINTER(ctypes.c_int64), ctypes.c_int32, p,
            ctypes.POINTER(ctypes.c_int64), ctypes.POINTER(ctypes.c_int32)]
        self.lib = lib

    def check(self, status):
        if status != 0:
            raise KilnError(status, self.lib.kiln_last_error().decode())


class Session:
    """An artifact opened with one session on it."""

    def __init__(self, runtime, artifact_path, threads=0):
        self.rt = runtime
        lib = runtime.lib
        self.artifact = ctypes.c_void_p()
        runtime.check(lib.kiln_artifact_open(os.fsencode(artifact_path),
                                             ctypes.byref(self.artifact)))
        self.session = ctypes.c_void_p()
        runtime.check(lib.kiln_session_create(self.artifact,
                                              ctypes.byref(self.session)))
        runtime.check(lib.kiln_session_set_num_threads(self.session, threads))
        self.entries = {}

    def close(self):
        self.rt.lib.kiln_session_destroy(self.session)
        self.rt.lib.kiln_artifact_close(self.artifact)

    def reset(self):
        self.rt.check(self.rt.lib.kiln_session_reset(self.session))

    def _tensor(self, array):
        array = np.require(array, requirements="C")  # keeps 0-d arrays 0-d
        dims = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
        tensor = ctypes.c_void_p()
        self.rt.check(self.rt.lib.kiln_tensor_create(
            _DTYPES[array.dtype], array.ndim, dims, ctypes.byref(tensor)))
        ctypes.memmove(self.rt.lib.kiln_tensor_data(tensor), array.ctypes.data,
                       array.nbytes)
        return tensor

    def _array(self, tensor):
        lib = self.rt.lib
        rank = lib.kiln_tensor_rank(tensor)
        dims = tuple(lib.kiln_tensor_dims(tensor)[i] for i in range(rank))
        dtype = _NUMPY[lib.kiln_tensor_dtype(tensor)]
        count = int(np.prod(dims)) if dims else 1
        buffer = (ctypes.c_char * (count * np.dtype(dtype).itemsize)).from_address(
            lib.kiln_tensor_data(tensor))
        return np.frombuffer(buffer, dtype=dtype).reshape(dims).copy()

    def run(self, entry, inputs, num_outputs=1):
        """Runs `entry` on numpy `inputs`; returns its outputs as arrays."""
        lib = self.rt.lib
        if entry not in self.entries:
            index = ctypes.c_int32()
            self.rt.check(lib.kiln_artifact_find_entry(
                self.artifact, entry.encode(), ctypes.byref(index)))
            self.entries[entry] = index.value
        tensors = [self._tensor(a) for a in inputs]
        ins = (ctypes.c_void_p * len(tensors))(*tensors)
        outs = (ctypes.c_void_p * num_outputs)()
        try:
            self.rt.check(lib.kiln_session_run(self.session, self.entries[entry],
                                               ins, len(tensors), outs,
                                               num_outputs))
            return [self._array(outs[i]) for i in range(num_outputs)]
        finally:
            for t in tensors:
                lib.kiln_tensor_destroy(t)
            for i in range(num_outputs):
                if outs[i]:
                    lib.kiln_tensor_destroy(outs[i])


    def prepare(self, entry, inputs, num_outputs=1):
        """A call of `entry` on `inputs` made once, for timing: the tensors
        are created now and the outputs kept between calls, so a call costs
        the run alone."""
        return PreparedCall(self, entry, inputs, num_outputs)


class PreparedCall:
    """`Session.prepare`'s call: call() runs, outputs() reads the results."""

    def __init__(self, session, entry, inputs, num_outputs):
        self.session = session
        lib = session.rt.lib
        index = ctypes.c_int32()
        session.rt.check(lib.kiln_artifact_find_entry(
            session.artifact, entry.encode(), ctypes.byref(index)))
        self.entry = index.value
        self.tensors = [session._tensor(a) for a in inputs]
        self.ins = (ctypes.c_void_p * len(self.tensors))(*self.tensors)
        self.outs = (ctypes.c_void_p * num_outputs)()

    def __call__(self):
        self.session.rt.check(self.session.rt.lib.kiln_session_run(
            self.session.session, self.entry, self.ins, len(self.tensors),
            self.outs, len(self.outs)))

    def outputs(self):
        return [self.session._array(t) for t in self.outs]

    def close(self):
        lib = self.session.rt.lib
        for t in list(self.tensors) + [t for t in self.outs if t]:
            lib.kiln_tensor_destroy(t)


TOKEN_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p,
                                  ctypes.c_int64, ctypes.c_int32)


class GenerateStats(ctypes.Structure):
    """kiln_generate_stats (include/kiln/runtime.h)."""
    _fields_ = [("decode_calls", ctypes.c_int32),
                ("draft_calls", ctypes.c_int32),
                ("drafted", ctypes.c_int32),
                ("accepted", ctypes.c_int32)]


class GenerateOptions(ctypes.Structure):
    """kiln_generate_options (include/kiln/runtime.h)."""
    _fields_ = [("size", ctypes.c_size_t),
                ("max_new_tokens", ctypes.c_int32),
                ("temperature", ctypes.c_float),
                ("top_k", ctypes.c_int32),
                ("top_p", ctypes.c_float),
                ("seed", ctypes.c_uint64),
                ("stop_tokens", ctypes.POINTER(ctypes.c_int64)),
                ("num_stop_tokens", ctypes.c_int32),
                ("on_token", TOKEN_CALLBACK),
                ("user_data", ctypes.c_void_p),
                ("draft_tokens", ctypes.c_int32),
                ("stats", ctypes.POINTER(GenerateStats))]


def generate(session, prompt, max_new_tokens, temperature=0.0, top_k=0,
             top_p=1.0, seed=0, stop_tokens=(), on_token=None, draft_tokens=0,
             stats=None):
    """kiln_session_generate on a 1-D token list; returns the new tokens.
    `on_token(token, index)` returning True stops generation; `stats`, a
    GenerateStats, receives the counts. A KilnError carries the tokens made
    before it as `tokens`."""
    lib = session.rt.lib
    options = GenerateOptions()
    lib.kiln_generate_options_init(ctypes.byref(options))
    options.max_new_tokens = max_new_tokens
    options.temperature = temperature
    options.top_k = top_k
    options.top_p = top_p
    options.seed = seed
    stops = (ctypes.c_int64 * max(len(stop_tokens), 1))(*stop_tokens)
    options.stop_tokens = stops
    options.num_stop_tokens = len(stop_tokens)
    callback = TOKEN_CALLBACK(
        lambda _, token, index: 1 if on_token and on_token(token, index) else 0)
    options.on_token = callback
    options.draft_tokens = draft_tokens
    if stats is not None:
        options.stats = ctypes.pointer(stats)
    prompt = (ctypes.c_int64 * len(prompt))(*[int(t) for t in prompt])
    tokens = (ctypes.c_int64 * max(max_new_tokens, 1))()
    count = ctypes.c_int32()
    status = lib.kiln_session_generate(
        session.session, prompt, len(prompt), ctypes.byref(options), tokens,
        ctypes.byref(count))
    made = [tokens[i] for i in range(count.value)]
    try:
        session.rt.check(status)
    except KilnError as error:
        error.tokens = made  # those generated before the error
        raise
    return made
