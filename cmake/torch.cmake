# LibTorch from a PyTorch installation's directory STX_TORCH_DIR, as the interface target stx_torch.
#
# PyTorch's own TorchConfig.cmake is not used: for a CUDA wheel it needs NVIDIA's CUDA toolkit
# (nvcc, cudart, nvrtc) just to configure, and neither Debian 12 nor the wheel provides one. stx
# compiles no CUDA code, so the build needs only what the wheel has: its headers, its libraries
# and the compile definitions its exported targets carry. The definitions are read from the
# wheel's Caffe2Targets.cmake (literal values only), not restated here. At run time the wheel's
# libraries find their CUDA libraries (nvidia/*/lib) through their own RPATH, so a GPU machine
# runs the same binary on the GPU with nothing else installed.
#
# Sets STX_TORCH_HAS_CUDA (1 when the installation has libtorch_cuda.so).

set(_lib ${STX_TORCH_DIR}/lib)
foreach(_name torch torch_cpu c10)
  if(NOT EXISTS ${_lib}/lib${_name}.so)
    message(FATAL_ERROR "${_lib}/lib${_name}.so not found: ${STX_TORCH_DIR} is not a PyTorch installation with LibTorch")
  endif()
endforeach()

# Link order as PyTorch's targets give it; the torch libraries are needed even where no symbol of
# stx refers to them (their static initializers register the operators and the CUDA hooks).
set(_libs ${_lib}/libtorch.so ${_lib}/libtorch_cpu.so)
set(STX_TORCH_HAS_CUDA 0)
if(EXISTS ${_lib}/libtorch_cuda.so AND EXISTS ${_lib}/libc10_cuda.so)
  list(APPEND _libs ${_lib}/libtorch_cuda.so ${_lib}/libc10_cuda.so)
  set(STX_TORCH_HAS_CUDA 1)
endif()
list(APPEND _libs ${_lib}/libc10.so)

set(_defs "")
set(_targets ${STX_TORCH_DIR}/share/cmake/Caffe2/Caffe2Targets.cmake)
if(EXISTS ${_targets})
  file(STRINGS ${_targets} _lines REGEX "^  INTERFACE_COMPILE_DEFINITIONS \"[^$]*\"$")
  foreach(_line IN LISTS _lines)
    string(REGEX REPLACE "^  INTERFACE_COMPILE_DEFINITIONS \"(.*)\"$" "\\1" _d "${_line}")
    list(APPEND _defs ${_d})
  endforeach()
  list(REMOVE_DUPLICATES _defs)
endif()

# c10d's NCCL process group header (parallel/world.cpp) includes CUDA's runtime headers and
# nccl.h: the wheel's nvidia-cuda-runtime, -crt, -cccl and nvidia-nccl packages have them
# (site-packages/nvidia/*/include), headers only. A PyTorch installed otherwise falls back on a
# CUDA toolkit's headers, where there is one.
set(_cuda_include "")
if(STX_TORCH_HAS_CUDA)
  foreach(_header cuda_runtime_api.h nccl.h)
    file(GLOB _found ${STX_TORCH_DIR}/../nvidia/*/include/${_header} /usr/local/cuda/include/${_header})
    if(NOT _found)
      message(FATAL_ERROR "${STX_TORCH_DIR} is a CUDA build but no ${_header} beside it (site-packages/nvidia/*/include: "
                          "the nvidia-* packages of requirements.txt) or in /usr/local/cuda/include")
    endif()
    list(GET _found 0 _found)
    get_filename_component(_dir ${_found} DIRECTORY)
    get_filename_component(_dir ${_dir} REALPATH)
    list(APPEND _cuda_include ${_dir})
  endforeach()
  list(REMOVE_DUPLICATES _cuda_include)
endif()

add_library(stx_torch INTERFACE)
target_include_directories(stx_torch SYSTEM INTERFACE ${STX_TORCH_DIR}/include
                                                      ${STX_TORCH_DIR}/include/torch/csrc/api/include ${_cuda_include})
target_compile_definitions(stx_torch INTERFACE ${_defs})
target_link_libraries(stx_torch INTERFACE -Wl,--push-state,--no-as-needed ${_libs} -Wl,--pop-state)
# The executables find LibTorch where it is installed (the .venv of the checkout by default).
target_link_options(stx_torch INTERFACE "LINKER:-rpath,${_lib}")
message(STATUS "LibTorch: ${_lib} (CUDA: ${STX_TORCH_HAS_CUDA}; ${_defs})")
