# Cross-compile for 64-bit Arm Linux with Debian's gcc-aarch64-linux-gnu, and
# run the resulting programs (ctest, try_run) under qemu-user.
#   cmake -S . -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# (scripts/test-arm.sh does this and runs the tests).
# The emulated CPU model comes from the QEMU_CPU environment variable
# (qemu's default is "max": neon + dotprod + i8mm); e.g. QEMU_CPU=cortex-a53
# ctest ... runs the same binaries on a CPU without dotprod.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(LOWBIT_ARM_TRIPLE aarch64-linux-gnu CACHE STRING "GNU triple of the Arm cross toolchain")
set(LOWBIT_ARM_SYSROOT /usr/${LOWBIT_ARM_TRIPLE} CACHE PATH "Arm libraries and loader for qemu -L")
# -DLOWBIT_ARM_CC=clang builds with clang instead (warnings check); there is
# no aarch64 libomp here, so clang's OpenMP links gcc's libgomp.
set(LOWBIT_ARM_CC gcc CACHE STRING "Compiler for the Arm build: gcc or clang")
if(LOWBIT_ARM_CC STREQUAL "clang")
  set(CMAKE_C_COMPILER clang)
  set(CMAKE_C_COMPILER_TARGET ${LOWBIT_ARM_TRIPLE})
  set(OpenMP_C_FLAGS "-fopenmp=libgomp" CACHE STRING "")
  set(OpenMP_C_LIB_NAMES gomp CACHE STRING "")
  set(OpenMP_gomp_LIBRARY ${LOWBIT_ARM_SYSROOT}/lib/libgomp.so.1 CACHE FILEPATH "")
else()
  set(CMAKE_C_COMPILER ${LOWBIT_ARM_TRIPLE}-gcc)
endif()

# Headers and libraries from the Arm sysroot only; build tools from the host.
set(CMAKE_FIND_ROOT_PATH ${LOWBIT_ARM_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L ${LOWBIT_ARM_SYSROOT})

# Debian's aarch64 gcc 12.2 crashes (internal compiler error in
# vect_transform_reduction) vectorizing a double fmax() reduction, as in
# tests/test_kquants.c's max_abs_err. Calling fmax as a function sidesteps it.
set(CMAKE_C_FLAGS_INIT "-fno-builtin-fmax")
