# Builds the pinned llama.cpp inside our tree as static libraries.
#
# Only the targets we link (llama, ggml, common) are built by default; the reference programs
# (llama-completion, llama-bench, llama-server) are built on demand for tests and benchmarks.

set(LLMD_LLAMA_SOURCE_DIR "$ENV{LLMD_LLAMA_SOURCE_DIR}" CACHE PATH
    "llama.cpp source checkout (default: third_party/llama.cpp, fetched by scripts/fetch-llama)")
if(NOT LLMD_LLAMA_SOURCE_DIR)
  set(LLMD_LLAMA_SOURCE_DIR "${PROJECT_SOURCE_DIR}/third_party/llama.cpp" CACHE PATH "" FORCE)
endif()
if(NOT EXISTS "${LLMD_LLAMA_SOURCE_DIR}/include/llama.h")
  message(FATAL_ERROR "llama.cpp not found at ${LLMD_LLAMA_SOURCE_DIR}: run scripts/fetch-llama "
                      "or set LLMD_LLAMA_SOURCE_DIR")
endif()

set(BUILD_SHARED_LIBS OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_COMMON ON CACHE BOOL "" FORCE)
set(LLAMA_BUILD_TOOLS ON CACHE BOOL "" FORCE)      # llama-bench, llama-server (on demand)
set(LLAMA_BUILD_EXAMPLES OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_SERVER ON CACHE BOOL "" FORCE)
set(LLAMA_BUILD_TESTS OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_APP OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_UI OFF CACHE BOOL "" FORCE)
set(LLAMA_USE_PREBUILT_UI OFF CACHE BOOL "" FORCE)  # never download at build time
set(LLAMA_OPENSSL OFF CACHE BOOL "" FORCE)
set(LLAMA_BUILD_IS_DEV OFF CACHE BOOL "" FORCE)
set(LLAMA_ALL_WARNINGS OFF CACHE BOOL "" FORCE)
set(GGML_RPC ON CACHE BOOL "" FORCE)
# ggml's own threadpool instead of OpenMP: one persistent pool per engine that any thread can
# drive, and that can be pinned (cpumask, priority). With OpenMP each calling thread gets its
# own team, and a warm-up on one thread then serving from another left two teams fighting
# over the cores (decode fell to 0.68x).
set(GGML_OPENMP OFF CACHE BOOL "" FORCE)
# CUDA: one architecture by default (each one multiplies the ~190 kernels' build time). The
# CUDA runtime and cuBLAS are linked as shared libraries (the toolkit ships no static cuBLAS
# here), so the machine that runs llmd needs them too.
if(LLMD_CUDA)
  set(GGML_CUDA ON CACHE BOOL "" FORCE)
  set(CMAKE_CUDA_ARCHITECTURES "${LLMD_CUDA_ARCHITECTURES}" CACHE STRING "" FORCE)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
endif()

add_subdirectory("${LLMD_LLAMA_SOURCE_DIR}" "${PROJECT_BINARY_DIR}/third_party/llama.cpp"
                 EXCLUDE_FROM_ALL SYSTEM)

# No AMX kernels, even where -march=native offers them (Sapphire Rapids and later Xeons): in
# llama.cpp 0.5.0 the AMX buffer type's matmul crashes (SIGSEGV in ggml_backend_amx_mul_mat, or
# SIGILL) on the first decode of a Q4_0/Q8_0 model on such a machine, in llama-completion as in
# llmd (upstream issue 20824, closed unfixed). The AVX-512/VNNI kernels serve those CPUs instead.
# The flags come after ggml's own -march=native, so they win.
if(TARGET ggml-cpu AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64|amd64"
   AND CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(ggml-cpu PRIVATE -mno-amx-tile -mno-amx-int8 -mno-amx-bf16)
endif()

# The reference programs the tests and benchmarks compare against.
add_custom_target(llama_reference_programs DEPENDS llama-completion llama-bench llama-server)
