# Read at llama.cpp's project() call when llama-cpp-python is built (scripts/setup.sh passes it as
# CMAKE_PROJECT_llama.cpp_INCLUDE_BEFORE). llama-cpp-python loads only libllama and libggml*, yet its
# CMakeLists forces llama.cpp's common library on (about a third of the build): it is not built.
set(LLAMA_BUILD_COMMON OFF CACHE BOOL "llama.cpp common library: not loaded by llama-cpp-python" FORCE)
