// Loads a model through the installed API, prints the greedy continuation's ids.
#include <iostream>

#include "ordo/ordo.hpp"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: consumer MODEL_DIR\n";
    return 2;
  }
  try {
    ordo::Model m = ordo::Model::load(argv[1]);
    ordo::TextGenerateParams p;
    p.max_new_tokens = 8;
    ordo::TextResult r = m.generate("Once upon a time", p);
    std::cout << r.text << "\n";
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
