zm_module(mfu
  DESCRIPTION "MFU and HFU against a stated peak: zeromini run --peak-tflops or the machine file's peak, in results.h5, summary.json and the closing lines; the planner's predicted MFU"
  NAMES MFU HFU PeakRate peak_tflops)
