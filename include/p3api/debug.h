/* p3api/debug.h -- softnic's Portals 3 debugging calls (libportals.so).
 *
 * PtlNIDebug(ni, mask) sets the NI's debug mask and returns the previous one
 * (PTL_DBG_NONE for a bad handle).  Bits softnic acts on, printed to stderr:
 * PTL_DBG_API (every call that fails, with its code), PTL_DBG_DROP (every
 * request this NI drops, printed by whoever processed it), PTL_DBG_EVENT
 * (every event deposited in this NI's queues).  The other bits are kept and
 * reported but print nothing.  PtlTblDump(ni, pt_index) prints the match
 * list of one portal (-1: every non-empty portal); PtlMEDump(me) one match
 * entry and its MD; both print to stderr.  p3_out is the reference
 * library's debug stream, which its test programs use: stderr, exported by
 * libportals.so.
 * Written from the ABI facts; not a copy of any vendor header.
 */
#ifndef _PTL3_API_DEBUG_H_
#define _PTL3_API_DEBUG_H_

#include <portals3.h>
#include <stdio.h>

#ifndef __bit
#define __bit(x) (1U<<(x))
#endif

#define PTL_DBG_NONE     0U
#define PTL_DBG_ALL      (0x0000ffff)
#define PTL_DBG_API      __bit(0)
#define PTL_DBG_PARSE    __bit(1)
#define PTL_DBG_MOVE     __bit(2)
#define PTL_DBG_DROP     __bit(3)
#define PTL_DBG_REQUEST  __bit(4)
#define PTL_DBG_DELIVERY __bit(5)
#define PTL_DBG_MD       __bit(6)
#define PTL_DBG_ME       __bit(7)
#define PTL_DBG_UNLINK   __bit(8)
#define PTL_DBG_EQ       __bit(9)
#define PTL_DBG_EVENT    __bit(10)
#define PTL_DBG_MEMORY   __bit(11)
#define PTL_DBG_SETUP    __bit(12)
#define PTL_DBG_SHUTDOWN __bit(13)

#define PTL_DBG_NI_ALL (0xffff0000)
#define PTL_DBG_NI_00  __bit(16)
#define PTL_DBG_NI_01  __bit(17)
#define PTL_DBG_NI_02  __bit(18)
#define PTL_DBG_NI_03  __bit(19)
#define PTL_DBG_NI_04  __bit(20)
#define PTL_DBG_NI_05  __bit(21)
#define PTL_DBG_NI_06  __bit(22)
#define PTL_DBG_NI_07  __bit(23)
#define PTL_DBG_NI_08  __bit(24)
#define PTL_DBG_NI_09  __bit(25)
#define PTL_DBG_NI_10  __bit(26)
#define PTL_DBG_NI_11  __bit(27)
#define PTL_DBG_NI_12  __bit(28)
#define PTL_DBG_NI_13  __bit(29)
#define PTL_DBG_NI_14  __bit(30)
#define PTL_DBG_NI_15  __bit(31)

#ifdef __cplusplus
extern "C" {
#endif

unsigned int PtlNIDebug(ptl_handle_ni_t ni, unsigned int mask);
extern FILE *p3_out;
int PtlTblDump(ptl_handle_ni_t ni, int pt_index);
int PtlMEDump(ptl_handle_me_t me_handle);

#ifdef __cplusplus
}
#endif

#endif /* _PTL3_API_DEBUG_H_ */
