// ordo command line: placeholder until the subcommands land.
#include <cstdio>
int main() {
  std::puts("ordo: no subcommands yet");
  return 2;
}
