#!/usr/bin/env python3
"""Adapts an unpacked Kokkos 4.6 source tree to CUDA 13 (used by build-kokkos.sh --cuda).

CUDA 13 changed three runtime calls that Kokkos 4.6.01 wraps in
core/src/Cuda/Kokkos_Cuda_Instance.hpp: cudaGraphAddDependencies gained an edge-data argument,
and cudaMemAdvise and cudaMemPrefetchAsync take a cudaMemLocation instead of a device number
(the prefetch also a flags word). Each call is replaced by a version switch on CUDART_VERSION, so
the adapted tree still builds with CUDA 12. Idempotent; fails if a call is not found as expected.

    kokkos-cuda13-adapt.py KOKKOS_SOURCE_DIR
"""
import pathlib
import sys

LOCATION = (
    "cudaMemLocation location{};\n"
    "    location.type = device == cudaCpuDeviceId ? cudaMemLocationTypeHost\n"
    "                                              : cudaMemLocationTypeDevice;\n"
    "    location.id = device;\n"
)

REPLACEMENTS = [
    (
        "return cudaGraphAddDependencies(graph, from, to, numDependencies);",
        "#if CUDART_VERSION >= 13000\n"
        "    return cudaGraphAddDependencies(graph, from, to, nullptr, numDependencies);\n"
        "#else\n"
        "    return cudaGraphAddDependencies(graph, from, to, numDependencies);\n"
        "#endif",
    ),
    (
        "return cudaMemAdvise(devPtr, count, advice, device);",
        "#if CUDART_VERSION >= 13000\n    "
        + LOCATION
        + "    return cudaMemAdvise(devPtr, count, advice, location);\n"
        "#else\n"
        "    return cudaMemAdvise(devPtr, count, advice, device);\n"
        "#endif",
    ),
    (
        "return cudaMemPrefetchAsync(devPtr, count, dstDevice,\n"
        "                                get_input_stream(stream));",
        "#if CUDART_VERSION >= 13000\n    "
        + LOCATION.replace("device", "dstDevice")
        + "    return cudaMemPrefetchAsync(devPtr, count, location, 0,\n"
        "                                get_input_stream(stream));\n"
        "#else\n"
        "    return cudaMemPrefetchAsync(devPtr, count, dstDevice,\n"
        "                                get_input_stream(stream));\n"
        "#endif",
    ),
]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    header = pathlib.Path(sys.argv[1]) / "core/src/Cuda/Kokkos_Cuda_Instance.hpp"
    text = header.read_text()
    if "CUDART_VERSION >= 13000" in text:
        print(f"kokkos-cuda13-adapt: {header} is already adapted")
        return 0
    for old, new in REPLACEMENTS:
        if text.count(old) != 1:
            print(f"kokkos-cuda13-adapt: {header}: expected one '{old.splitlines()[0]}'",
                  file=sys.stderr)
            return 1
        text = text.replace(old, new)
    header.write_text(text)
    print(f"kokkos-cuda13-adapt: adapted {header} to CUDA 13")
    return 0


if __name__ == "__main__":
    sys.exit(main())
