/* Completion bookkeeping: max_outstanding_nb and NO_SPACE, retiring syncids,
 * gsync not retiring them, _nbi never NO_SPACE, NULL and forged handles. */
#include "dmtest.h"

int main(void) {
    dm_init_n(DMAPP_MIN_OUTSTANDING_NB);           /* 5 */
    int64_t *t = dmapp_sheap_malloc(64 * 8);
    CHECK(t != NULL);
    memset(t, 0, 64 * 8);
    int64_t v[64];
    for (int i = 0; i < 64; i++) v[i] = i + 1;
    dmapp_syncid_handle_t h[8] = {0};
    barrier();
    for (int i = 0; i < 5; i++) OK(dmapp_put_nb(t + i, sheap(), me, v + i, 1, DMAPP_QW, &h[i]));
    for (int i = 0; i < 5; i++) CHECK(h[i] != NULL);
    /* The sixth explicit request: NO_SPACE, no side effect, handle untouched. */
    h[5] = (dmapp_syncid_handle_t)0;
    RC_EQ(dmapp_put_nb(t + 5, sheap(), me, v + 5, 1, DMAPP_QW, &h[5]), DMAPP_RC_NO_SPACE);
    RC_EQ(dmapp_afadd_qw_nb(&v[60], t + 6, sheap(), me, 1, &h[5]), DMAPP_RC_NO_SPACE);
    CHECK(h[5] == NULL);
    CHECK_EQ(t[5], 0);
    CHECK_EQ(t[6], 0);
    /* gsync covers _nbi only: it does not free syncids. */
    OK(dmapp_gsync_wait());
    RC_EQ(dmapp_get_nb(v + 40, t, sheap(), me, 1, DMAPP_QW, &h[5]), DMAPP_RC_NO_SPACE);
    /* _nbi is not limited by max_outstanding_nb. */
    for (int i = 0; i < 100; i++) OK(dmapp_aadd_qw_nbi(t + 7, sheap(), me, 1));
    OK(dmapp_gsync_wait());
    CHECK_EQ(t[7], 100);
    /* Retire one (test), then one more request fits. */
    int flag = -1;
    dmapp_syncid_handle_t keep = h[0];
    OK(dmapp_syncid_test(&h[0], &flag));
    CHECK_EQ(flag, 1);
    CHECK(h[0] == NULL);
    OK(dmapp_put_nb(t + 5, sheap(), me, v + 5, 1, DMAPP_QW, &h[5]));
    RC_EQ(dmapp_put_nb(t + 8, sheap(), me, v + 8, 1, DMAPP_QW, &h[6]), DMAPP_RC_NO_SPACE);
    /* A retired handle value is refused; a NULL handle value is complete. */
    RC_EQ(dmapp_syncid_wait(&keep), DMAPP_RC_INVALID_PARAM);
    dmapp_syncid_handle_t forged = (dmapp_syncid_handle_t)(uintptr_t)0xdead0001;
    RC_EQ(dmapp_syncid_wait(&forged), DMAPP_RC_INVALID_PARAM);
    flag = -1;
    OK(dmapp_syncid_test(&h[0], &flag));   /* h[0] is NULL now */
    CHECK_EQ(flag, 1);
    RC_EQ(dmapp_syncid_test(NULL, &flag), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_syncid_test(&h[1], NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_syncid_wait(NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_gsync_test(NULL), DMAPP_RC_INVALID_PARAM);
    flag = -1;
    OK(dmapp_gsync_test(&flag));
    CHECK_EQ(flag, 1);
    for (int i = 1; i < 6; i++) OK(dmapp_syncid_wait(&h[i]));
    for (int i = 0; i < 6; i++) CHECK_EQ(t[i], i + 1);
    /* All retired: the full budget is back. */
    for (int i = 0; i < 5; i++) OK(dmapp_aadd_qw_nb(t + 9, sheap(), me, 1, &h[i]));
    for (int i = 0; i < 5; i++) OK(dmapp_syncid_wait(&h[i]));
    CHECK_EQ(t[9], 5);
    /* Finalize with un-retired requests: drained, no hang. */
    OK(dmapp_put_nb(t + 10, sheap(), me, v, 1, DMAPP_QW, &h[0]));
    barrier();
    OK(dmapp_finalize());
    printf("dmapp_sync: pe %d of %d ok\n", me, npes);
    return 0;
}
