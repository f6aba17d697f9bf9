zm_module(timeline
  DESCRIPTION "The run's timeline (output.trace: trace.json) and its exposed-communication and bus-bandwidth figures"
  KEYS output.trace output.trace_steps
  NAMES trace.json Perfetto exposure "exposed communication" overlap_efficiency
        "overlap efficiency" busbw comm_exposed comm_in_flight)
