#include "ordo/tokenizer.hpp"
