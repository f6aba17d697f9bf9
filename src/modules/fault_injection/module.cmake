zm_module(fault_injection
  DESCRIPTION "Faults made on purpose in real runs, from the environment a test sets (a rank killed, hung, stopped or failing, a full disk, a crash before a checkpoint is published, a NaN gradient, a hung MPI_Init), for the tests of the core's fault handling"
  NAMES ZEROMINI_TEST_FAULT ZEROMINI_TEST_FAULT_STEP ZEROMINI_TEST_FAULT_RANK
        ZEROMINI_TEST_CRASH_BEFORE_RENAME ZEROMINI_TEST_STALL_MPI_INIT)
