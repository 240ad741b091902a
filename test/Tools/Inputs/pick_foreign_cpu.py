"""Prints an LLVM CPU name with a feature this machine lacks, from the
machine's own /proc/cpuinfo flags: any x86 CPU lacks AVX-512 (Zen 4 has it),
SSE4a (AMD's; Zen 3 has it) or AMX (Sapphire Rapids has it)."""
flags = set()
with open("/proc/cpuinfo") as cpuinfo:
    for line in cpuinfo:
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
if "avx512f" not in flags:
    print("znver4")
elif "sse4a" not in flags:
    print("znver3")
else:
    print("sapphirerapids")
