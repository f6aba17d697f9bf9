/* Preloaded into the ranks (LD_PRELOAD) where MPICH 4.0.x's ch4:ucx device talks TCP between
 * nodes: scripts/netns-cluster.sh and the multinode tests load it, and users of such an MPICH
 * may too (scripts/README.md, "Several nodes on one machine").
 *
 * Why: MPICH 4.0.2's MPI_Finalize (src/mpid/ch4/netmod/ucx/ucx_init.c, finalize hook) closes
 * every UCX endpoint with ucp_disconnect_nb, waits for the closes, and only then enters the PMI
 * barrier. Over UCX's TCP transport a close can need the peer's progress; a peer that finished
 * its own closes sits in the PMI barrier, which does not progress UCX, and both wait forever
 * (on two network namespaces of one host: 4 to 5 runs in 10). Later MPICH enters the PMI
 * barrier before the disconnects.
 *
 * What: the endpoint is left open instead. Nothing is lost: MPI_Finalize runs after every
 * message of the program has completed, and ucp_worker_destroy, which MPICH calls after the
 * barrier, releases the endpoints that remain. The symbol shadows libucp's only in processes
 * that load this library. */
#include <ucp/api/ucp.h>

ucs_status_ptr_t ucp_disconnect_nb(ucp_ep_h ep) {
  (void)ep;
  return NULL; /* UCS_OK: completed, so MPICH does not wait on it */
}
