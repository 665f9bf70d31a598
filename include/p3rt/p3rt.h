/* p3rt/p3rt.h -- softnic's Portals 3 rank runtime (libportals.so).
 *
 * A program learns its rank, the group size and every rank's process id
 * here.  PtlSetRank(ni, (unsigned)-1, (unsigned)-1) takes them from the
 * environment the launcher sets: PTL_MY_RID (this rank), PTL_NIDMAP and
 * PTL_PIDMAP (colon-separated NIDs and PIDs of ranks 0..n-1; numbers in
 * decimal, 0x-hex or 0-octal; empty fields skipped) and PTL_MY_JID (the job
 * id, optional).  snrun sets all four.  Where PTL_MY_RID is absent (e.g.
 * under MPICH's mpiexec) softnic derives them from PMI: NIDs are the PMI
 * node map, PIDs each rank's index on its node, the job id a hash of the
 * PMI job name (these are the ids PtlNIInit(PTL_PID_ANY) gives).  Any other
 * (rank, size) just records them; the maps are then set with PtlSetNIDMap /
 * PtlSetPIDMap (group_size must equal the size given).  PtlGetRank,
 * PtlGetRankId and the map getters set the runtime up from the environment
 * (or PMI) when the program has not called PtlSetRank.
 * Before PtlNIInit (even before PtlInit) every call works on any handle,
 * PTL_INVALID_HANDLE as a rule: what is set is kept for the next NI, whose
 * PtlNIInit(PTL_PID_ANY) takes its PID from the PID map entry of its rank
 * (the NID stays the node's).  Once an NI is up, the calls take its handle
 * or PTL_INVALID_HANDLE; the NI's runtime starts as what was kept, else the
 * launcher's.  Errors: PTL_NO_INIT (neither environment nor PMI gives a
 * rank), PTL_NI_INVALID (another handle while an NI is up), PTL_SEGV (NULL
 * pointer), PTL_FAIL (sizes that do not agree, a rank out of range,
 * malformed maps).
 * Written from the ABI facts; not a copy of any vendor header.
 */
#ifndef _PTL3_RT_P3RT_H_
#define _PTL3_RT_P3RT_H_

#include <portals3.h>

#ifdef __cplusplus
extern "C" {
#endif

int PtlSetRank(ptl_handle_ni_t ni, unsigned rank, unsigned group_size);
int PtlSetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned group_size);
int PtlSetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned group_size);
int PtlGetRank(ptl_handle_ni_t ni, unsigned *rank, unsigned *group_size);
int PtlGetRankId(ptl_handle_ni_t ni, unsigned rank, ptl_process_id_t *id);
int PtlGetNIDMap(ptl_handle_ni_t ni, ptl_nid_t *map, unsigned group_size);
int PtlGetPIDMap(ptl_handle_ni_t ni, ptl_pid_t *map, unsigned group_size);
/* Sets the job id PtlGetJid reports and requests carry (exported by the
 * reference runtime without a declaration; declared here). */
int PtlSetJID(ptl_jid_t jid);

#ifdef __cplusplus
}
#endif

#endif /* _PTL3_RT_P3RT_H_ */
