#include "cli/cli.h"

int main(int argc, char** argv) { return iofleet::cli::CliMain(argc, argv); }
