// Model file sniffing: which engine a file is for, decided from its first bytes, never from
// its name. Pure; safe from any thread.
#ifndef LLMD_FORMAT_MODEL_FORMAT_H_
#define LLMD_FORMAT_MODEL_FORMAT_H_

#include <cstddef>
#include <string_view>

#include "llmd/result.h"

namespace llmd::format {

// How many leading bytes SniffModelFormat looks at.
inline constexpr size_t kSniffBytes = 64;

enum class ModelFormat {
  kGguf,               // "GGUF" at 0, version 2 or 3: the llama.cpp engine
  kExecuTorchProgram,  // flatbuffer identifier "ET12" at 4: an ExecuTorch .pte program
};

std::string_view ModelFormatName(ModelFormat format);

// Classifies a file from its first bytes (`head` is the first min(size, kSniffBytes) bytes).
// Errors (Corruption unless noted) say what the file is:
//  - "unsupported model format: an empty file", "...: a ZIP archive (PyTorch checkpoint?)",
//    "...: a Python pickle", "...: safetensors", "...: an ELF executable", "...: a text file";
//  - a GGUF of another version ("GGUF version 1 is not supported; need 2 or 3");
//  - an ExecuTorch program of another version ("ET11 ... incompatible");
//  - "FT01": an ExecuTorch weights file (.ptd), "load the matching .pte".
Result<ModelFormat> SniffModelFormat(std::string_view head);

}  // namespace llmd::format

#endif  // LLMD_FORMAT_MODEL_FORMAT_H_
