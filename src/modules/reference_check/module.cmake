zm_module(reference_check
  DESCRIPTION "Checking a build against committed references: zeromini run --check-reference and --write-reference"
  NAMES check-reference write-reference)
