zm_module(space_reservation
  DESCRIPTION "Disk space for a checkpoint held before it is written and handed over part by part, so that a full disk stops the write at its start on every rank"
  NAMES SpaceReservation .space-reservation fallocate)
