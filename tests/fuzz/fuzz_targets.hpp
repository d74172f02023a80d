// The fuzz targets: one function per parser or entry point, taking the raw input bytes. Each
// libFuzzer binary (tests/fuzz/fuzz_main.cpp, built with ORDO_FUZZ=ON) calls one of them; the
// GoogleTest suite replays every input saved under tests/data/fuzz-regressions/<target>/ through
// the same function (tests/fuzz_regressions_test.cpp).
//
// A target accepts any bytes: an ordo::Error (or, for the CLI, a CLI11 usage error) is a correct
// answer; any other exception escapes and is reported as a crash, and so is a broken property
// (std::abort after printing what differs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ordo::fuzz {

using Target = int (*)(const uint8_t* data, size_t size);

struct TargetInfo {
  const char* name;  // also the corpus and regression directory name
  Target run;
};

// Every target, by name: safetensors, config, sentencepiece, wordpiece, bpe_files, tokenizer_json,
// tokenizer_config, roundtrip, cli_args, checkpoint (pytorch_model.bin: zip + pickle), weights_index
// (a shard index), added_tokens, chat_template, gguf (a GGUF file loaded as a model), serve_request
// (`ordo serve`'s request bodies).
const std::vector<TargetInfo>& targets();
Target find_target(const std::string& name);  // nullptr if unknown

}  // namespace ordo::fuzz
