zm_module(provenance
  DESCRIPTION "The run's manifest: what ran, where and with what (versions, hosts, devices, layout), as results.h5's /manifest and summary.json's manifest"
  NAMES manifest)
