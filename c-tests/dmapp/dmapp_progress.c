/* Progress callbacks (dmapp.h): called once per wait of the library — every blocking
 * data-motion call, dmapp_syncid_wait, dmapp_gsync_wait — in registration order with
 * their data; not for _nb/_nbi issue; never re-entered from DMAPP calls made inside a
 * callback; keyed by function (registering again replaces the data); at most 16
 * (RESOURCE_ERROR); NULL -> INVALID_PARAM; deregistering an unknown one -> NOT_FOUND;
 * usable before dmapp_init.  A callback may deregister itself. */
#include "dmtest.h"

static long calls[2];
static int order[64], norder;
static int64_t *cell;
static int right;

static int cb_a(void *d) { ((long *)d)[0]++; if (norder < 64) order[norder++] = 1; return 0; }
static int cb_b(void *d) {
    ((long *)d)[0]++;
    if (norder < 64) order[norder++] = 2;
    /* A blocking DMAPP call inside a callback: the callbacks are not re-entered. */
    int64_t v = 1;
    CHECK_EQ(dmapp_put(cell + 1, sheap(), right, &v, 1, DMAPP_QW), DMAPP_RC_SUCCESS);
    return 5; /* ignored */
}
static long once_calls;
static int cb_once(void *d) { once_calls++; CHECK_EQ(dmapp_deregister_progress_cb(cb_once), DMAPP_RC_SUCCESS); return 0; }

/* Sixteen distinct functions to fill the table. */
#define F(i) static int f##i(void *d) { (void)d; return 0; }
F(0) F(1) F(2) F(3) F(4) F(5) F(6) F(7) F(8) F(9) F(10) F(11) F(12) F(13) F(14) F(15)
static int (*const fill[16])(void *) = { f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15 };

int main(void) {
    /* Before dmapp_init: registration works. */
    RC_EQ(dmapp_register_progress_cb(NULL, NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_deregister_progress_cb(NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_deregister_progress_cb(cb_a), DMAPP_RC_NOT_FOUND);
    long junk = 0;
    OK(dmapp_register_progress_cb(cb_a, &junk));
    OK(dmapp_register_progress_cb(cb_a, &calls[0]));   /* replaces the data */
    dm_init();
    right = (me + 1) % npes;
    cell = dmapp_sheap_malloc(64);
    CHECK(cell != NULL);
    memset(cell, 0, 64);
    barrier();
    int64_t v = 7, back = 0;

    OK(dmapp_put(cell, sheap(), right, &v, 1, DMAPP_QW));          /* blocking: a wait */
    CHECK_EQ(calls[0], 1);
    CHECK_EQ(junk, 0);
    OK(dmapp_register_progress_cb(cb_b, &calls[1]));
    OK(dmapp_get(&back, cell, sheap(), right, 1, DMAPP_QW));
    CHECK_EQ(calls[0], 2);
    CHECK_EQ(calls[1], 1);
    CHECK(norder == 3 && order[1] == 1 && order[2] == 2);          /* registration order */
    OK(dmapp_aadd_qw(cell + 2, sheap(), right, 1));                 /* blocking AMO */
    CHECK_EQ(calls[0], 3);

    /* Issue of _nb/_nbi does not wait; their waits do. */
    dmapp_syncid_handle_t h = NULL;
    OK(dmapp_put_nb(cell, sheap(), right, &v, 1, DMAPP_QW, &h));
    OK(dmapp_put_nbi(cell, sheap(), right, &v, 1, DMAPP_QW));
    CHECK_EQ(calls[0], 3);
    OK(dmapp_syncid_wait(&h));
    CHECK_EQ(calls[0], 4);
    OK(dmapp_gsync_wait());
    CHECK_EQ(calls[0], 5);
    CHECK_EQ(calls[1], 4);

    /* A callback may deregister itself (runs once); deregistered ones stop. */
    OK(dmapp_register_progress_cb(cb_once, NULL));
    OK(dmapp_gsync_wait());
    OK(dmapp_gsync_wait());
    CHECK_EQ(once_calls, 1);
    RC_EQ(dmapp_deregister_progress_cb(cb_once), DMAPP_RC_NOT_FOUND);
    OK(dmapp_deregister_progress_cb(cb_b));
    OK(dmapp_gsync_wait());
    CHECK_EQ(calls[1], 6);
    CHECK_EQ(calls[0], 8);

    /* The table holds 16: cb_a plus 15 more, then RESOURCE_ERROR. */
    for (int i = 0; i < 15; i++) OK(dmapp_register_progress_cb(fill[i], NULL));
    RC_EQ(dmapp_register_progress_cb(fill[15], NULL), DMAPP_RC_RESOURCE_ERROR);
    OK(dmapp_register_progress_cb(fill[3], &v));                    /* known: replaces data */
    for (int i = 0; i < 15; i++) OK(dmapp_deregister_progress_cb(fill[i]));
    OK(dmapp_deregister_progress_cb(cb_a));
    OK(dmapp_put(cell, sheap(), right, &v, 1, DMAPP_QW));
    CHECK_EQ(calls[0], 8);

    barrier();
    /* cb_b's puts from every rank landed in cell[1] of its right neighbour. */
    CHECK_EQ(cell[1], 1);
    CHECK_EQ(cell[2], 1);
    barrier();
    printf("dmapp_progress: pe %d of %d ok\n", me, npes);
    OK(dmapp_finalize());
    return 0;
}
