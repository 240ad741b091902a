"""What this machine can do at best: one core's fp32 FMA peak, the streaming
read bandwidth of memory, and the floors derived from them.

The peak must never under-read, or a "floor" ends up slower than the
runtimes it bounds. So bench/fma_peak.c is built for the widest vectors the
CPU reports, and its disassembly is checked to hold multiply-adds on those
registers before its number is believed (clang's tuning for Intel server
cores prefers 256-bit vectors and would otherwise measure half an AVX-512
core's peak). And a floor that a measured time beats is refused, not printed.
"""
import os
import platform
import re
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


class PeakError(RuntimeError):
    """A peak that cannot be trusted: the benchmark stops rather than print
    a floor from it."""


def cpu_flags():
    """The x86 feature flags /proc/cpuinfo lists (empty elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def widest_fma_register():
    """The register class of the widest fp32 FMA this CPU has: zmm, ymm,
    or None where it has no vector FMA that bench/fma_peak.c checks."""
    if platform.machine() not in ("x86_64", "AMD64"):
        return None
    flags = cpu_flags()
    if "avx512f" in flags:
        return "zmm"
    if "fma" in flags:
        return "ymm"
    return None


def host_chip():
    """LLVM's name for this CPU (znver3, emeraldrapids, ...), as clang's
    -march=native picks it, or "unknown"."""
    compiler = find_c_compiler()
    if compiler is None:
        return "unknown"
    probe = subprocess.run([compiler, "-march=native", "-###", "-x", "c",
                            "-c", "/dev/null"], capture_output=True, text=True)
    match = re.search(r'"-target-cpu" "([^"]+)"', probe.stderr)
    return match.group(1) if match else "unknown"


def update_machine_section(path, title, kind, body):
    """Writes `body` as the section for machine kind `kind` ("## " heading)
    of the document at `path`, keeping the sections of other kinds, so a
    result on one kind never replaces the reference for another."""
    sections = {}
    order = []
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
        for part in re.split(r"^## ", text, flags=re.M)[1:]:
            heading, _, rest = part.partition("\n")
            sections[heading.strip()] = rest.strip("\n")
            order.append(heading.strip())
    if kind not in sections:
        order.append(kind)
    sections[kind] = body.strip("\n")
    with open(path, "w") as f:
        f.write(f"# {title}\n\nOne section per machine kind met; each "
                "section's figures come from one run on that kind.\n")
        for heading in order:
            f.write(f"\n## {heading}\n\n{sections[heading]}\n")


def find_c_compiler():
    for name in ("clang-22", "clang", "cc"):
        if subprocess.run(["sh", "-c", f"command -v {name}"],
                          capture_output=True).returncode == 0:
            return name
    return None


def build(source, binary, extra=()):
    """Builds bench/`source` for this CPU at its widest vectors."""
    compiler = find_c_compiler()
    if compiler is None:
        raise PeakError("no C compiler to build bench/" + source)
    wide = (["-mprefer-vector-width=512"]
            if widest_fma_register() == "zmm" else [])
    subprocess.run([compiler, "-O2", "-march=native", "-ffp-contract=fast",
                    "-pthread"] + wide + list(extra)
                   + [os.path.join(HERE, source), "-o", binary], check=True)


def check_fma_width(binary):
    """Raises PeakError unless `binary`'s multiply-adds use the widest
    registers the CPU has."""
    register = widest_fma_register()
    if register is None:
        return
    objdump = next((tool for tool in ("llvm-objdump-22", "objdump")
                    if subprocess.run(["sh", "-c", f"command -v {tool}"],
                                      capture_output=True).returncode == 0),
                   None)
    if objdump is None:
        raise PeakError("no objdump to check bench/fma_peak.c's vectors")
    text = subprocess.run([objdump, "-d", "--no-show-raw-insn", binary],
                          capture_output=True, text=True, check=True).stdout
    widths = set(re.findall(r"vfmadd\w*ps\s+%([xyz]mm)", text))
    if register not in widths:
        raise PeakError(
            f"bench/fma_peak.c was built with multiply-adds on "
            f"{', '.join(sorted(widths)) or 'no vector registers'}, but this "
            f"CPU has {register}: its peak would under-read")


_peak_cache = {}


def measure_fma_peak(again=False):
    """One core's fp32 FMA throughput in GFLOP/s (bench/fma_peak.c), built
    and checked for the CPU's widest vectors. Measured once per process;
    `again` measures once more and keeps the higher reading, since load from
    other tenants of the machine only ever lowers one."""
    if "fma" not in _peak_cache or again:
        with tempfile.TemporaryDirectory() as tmp:
            binary = os.path.join(tmp, "fma_peak")
            build("fma_peak.c", binary)
            check_fma_width(binary)
            out = subprocess.run([binary], capture_output=True, text=True,
                                 check=True).stdout
        _peak_cache["fma"] = max(float(out.strip()), _peak_cache.get("fma", 0))
    return _peak_cache["fma"]


def stream_bandwidth(threads):
    """GB/s of a streaming read on `threads` threads (bench/stream_read.c)."""
    with tempfile.TemporaryDirectory() as tmp:
        binary = os.path.join(tmp, "stream_read")
        build("stream_read.c", binary)
        out = subprocess.run([binary, str(threads)], capture_output=True,
                             text=True, check=True).stdout
    return float(out.strip())


PEAK_ATTEMPTS = 8


def checked_floor(what, gflop, threads, measured_ms):
    """The time in ms `gflop` of multiply-adds take at the measured peak on
    `threads` cores, after checking that no measured time (runtime name ->
    ms) beats it. A time that does gets the peak measured again, up to
    PEAK_ATTEMPTS readings in all (on a shared machine one reading scatters
    by 10% and more); if the best still gives a floor beaten, the peak
    under-reads and PeakError says so."""
    for attempt in range(PEAK_ATTEMPTS):
        floor_ms = gflop / (measure_fma_peak(again=attempt > 0) * threads) * 1e3
        beaten = {name: ms for name, ms in measured_ms.items() if ms < floor_ms}
        if not beaten:
            return floor_ms
    name, ms = next(iter(beaten.items()))
    raise PeakError(
        f"{what}: {name} took {ms:.3f} ms, under the floor of "
        f"{floor_ms:.3f} ms at the measured peak; the peak measurement "
        "under-reads on this machine")
