/* Bad input to the DMAPP collectives: each call gets its documented code and changes
 * nothing (a refused create leaves no pset behind, so the identifier stays free; a
 * refused start leaves out untouched and the pset idle).  Also, with argument "death"
 * on 2 PEs: PE 1 exits without joining; PE 0's dmapp_c_pset_wait answers
 * TRANSACTION_ERROR instead of waiting forever. */
#include "dmtest.h"
#include <time.h>
#include <unistd.h>

static int death(void)
{
    if (npes != 2) SKIP("death mode needs 2 PEs");
    dmapp_c_pset_desc_t d = dm_strided(2, 0, 1);
    dmapp_c_pset_handle_t ps;
    OK(dmapp_c_pset_create(&d, 5, 0, NULL, &ps));
    OK(dmapp_c_pset_export(ps));
    barrier();
    if (me == 1) {
        printf("dmapp_coll_bad: PE 1 ok (exits without joining)\n");
        fflush(stdout);
        /* Only the PMI connection ended first: mpiexec (hydra) kills the whole job when a
         * client's PMI socket closes before PMI_Finalize and it notices that first. */
        PMI_Finalize();
        _exit(0);
    }
    OK(dmapp_c_barrier_join(ps));
    time_t t0 = time(NULL);
    RC_EQ(dmapp_c_pset_wait(ps), DMAPP_RC_TRANSACTION_ERROR);
    CHECK(time(NULL) - t0 < 20);
    printf("dmapp_coll_bad: PE 0 ok (transaction error once PE 1 exited)\n");
    return 0;
}

int main(int argc, char **argv)
{
    dmapp_c_pset_desc_t d = dm_strided(1, 0, 1);
    dmapp_c_pset_handle_t ps = NULL, ok_ps;
    uint32_t nm;
    /* Before dmapp_init: only nelems_max works. */
    RC_EQ(dmapp_c_pset_create(&d, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_nelems_max(DMAPP_C_TYPE_LAST, &nm), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_nelems_max((dmapp_c_type_t)100, &nm), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_nelems_max(DMAPP_C_INT32, NULL), DMAPP_RC_INVALID_PARAM);
    OK(dmapp_c_greduce_nelems_max(DMAPP_C_INT32, &nm));
    CHECK_EQ(nm, 64);
    OK(dmapp_c_greduce_nelems_max(DMAPP_C_DOUBLE_UINT64, &nm));
    CHECK_EQ(nm, 16);
    dm_init();
    if (argc > 1 && strcmp(argv[1], "death") == 0) return death();

    uint32_t vec[4] = { (uint32_t)me, (uint32_t)me, 0, 0 };
    dmapp_c_pset_attrs_t attrs = { .type = DMAPP_C_PSET_ATTRS_VER1, .u.type1.radix = 4 };
    char concat[64];
    /* create */
    d = dm_strided((uint32_t)npes, 0, 1);
    RC_EQ(dmapp_c_pset_create(NULL, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_pset_create(&d, 1, 0, NULL, NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_pset_create(&d, 0, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);          /* identifier 0 */
    RC_EQ(dmapp_c_pset_create(&d, 1, 0x8, NULL, &ps), DMAPP_RC_INVALID_PARAM);        /* unknown mode */
    RC_EQ(dmapp_c_pset_create(&d, 1, DMAPP_C_PSET_MODE_CONCAT, NULL, &ps), DMAPP_RC_INVALID_PARAM); /* no buffer */
    attrs.type = (dmapp_c_pset_attrs_type_t)2;
    RC_EQ(dmapp_c_pset_create(&d, 1, 0, &attrs, &ps), DMAPP_RC_INVALID_PARAM);
    attrs.type = DMAPP_C_PSET_ATTRS_VER1;
    attrs.u.type1.radix = 1;
    RC_EQ(dmapp_c_pset_create(&d, 1, 0, &attrs, &ps), DMAPP_RC_INVALID_PARAM);
    attrs.u.type1.radix = 64;
    RC_EQ(dmapp_c_pset_create(&d, 1, 0, &attrs, &ps), DMAPP_RC_INVALID_PARAM);
    attrs.u.type1.radix = 4;
    dmapp_c_pset_desc_t bad = d;
    bad.type = DMAPP_C_PSET_DELIMITER_LAST;
    RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);
    bad = dm_strided(0, 0, 1);
    RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);        /* no members */
    bad = dm_strided((uint32_t)npes + 1, 0, 1);
    RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);        /* more than npes */
    bad = dm_strided(2, (uint32_t)me, 0);
    RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);        /* stride 0 */
    bad = dm_strided(1, (uint32_t)npes, 1);
    RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);        /* PE out of range */
    bad = dm_strided((uint32_t)npes, 0, 0xffffffffu);
    if (npes > 1) RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);
    memset(&bad, 0, sizeof bad);
    bad.type = DMAPP_C_PSET_DELIMITER_VEC;
    bad.u.vec_type.n_pes = 1;
    bad.u.vec_type.vec_pes = NULL;
    RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);        /* NULL vector */
    bad.u.vec_type.n_pes = 2;
    bad.u.vec_type.vec_pes = vec;
    if (npes > 1) RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM); /* PE twice */
    if (npes > 1) {
        vec[0] = (uint32_t)((me + 1) % npes);
        bad.u.vec_type.n_pes = 1;
        RC_EQ(dmapp_c_pset_create(&bad, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);    /* caller not a member */
    }
    CHECK(ps == NULL);

    /* A good pset; the identifier is in use while it lives. */
    d.concat_buf = concat;
    d.concat_buf_size = sizeof concat;
    OK(dmapp_c_pset_create(&d, 1, DMAPP_C_PSET_MODE_CONCAT | DMAPP_C_PSET_MODE_HW_OFFLOAD, &attrs, &ok_ps));
    RC_EQ(dmapp_c_pset_create(&d, 1, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);
    /* Operations before export. */
    RC_EQ(dmapp_c_barrier_join(ok_ps), DMAPP_RC_INVALID_PARAM);
    OK(dmapp_c_pset_export(ok_ps));
    RC_EQ(dmapp_c_pset_export(NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_pset_export((dmapp_c_pset_handle_t)&d), DMAPP_RC_INVALID_PARAM);

    /* greduce arguments. */
    int64_t in[80], out[80];
    for (int i = 0; i < 80; i++) { in[i] = i; out[i] = -7; }
    RC_EQ(dmapp_c_greduce_start(ok_ps, NULL, out, 1, DMAPP_C_INT64, DMAPP_C_SUM), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, NULL, 1, DMAPP_C_INT64, DMAPP_C_SUM), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 0, DMAPP_C_INT64, DMAPP_C_SUM), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 33, DMAPP_C_INT64, DMAPP_C_SUM), DMAPP_RC_INVALID_PARAM);  /* > nelems_max */
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 1, DMAPP_C_TYPE_LAST, DMAPP_C_SUM), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 1, DMAPP_C_INT64, DMAPP_C_OP_LAST), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 1, DMAPP_C_DOUBLE, DMAPP_C_BXOR), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 1, DMAPP_C_INT64, DMAPP_C_MINLOC), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 1, DMAPP_C_INT64_UINT64, DMAPP_C_SUM), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_greduce_start(NULL, in, out, 1, DMAPP_C_INT64, DMAPP_C_SUM), DMAPP_RC_INVALID_PARAM);
    for (int i = 0; i < 80; i++) CHECK_EQ(out[i], -7);
    OK(dmapp_c_pset_test(ok_ps));              /* still idle */
    RC_EQ(dmapp_c_pset_test(NULL), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_pset_wait((dmapp_c_pset_handle_t)&in), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_pset_cancel_op(NULL), DMAPP_RC_INVALID_PARAM);

    /* At nelems_max it works. */
    OK(dmapp_c_greduce_start(ok_ps, in, out, 32, DMAPP_C_INT64, DMAPP_C_SUM));
    RC_EQ(dmapp_c_greduce_start(ok_ps, in, out, 1, DMAPP_C_INT64, DMAPP_C_SUM), DMAPP_RC_BUSY);
    RC_EQ(dmapp_c_pset_destroy(ok_ps), DMAPP_RC_RESOURCE_ERROR);
    OK(dmapp_c_pset_wait(ok_ps));
    for (int i = 0; i < 32; i++) CHECK_EQ(out[i], (int64_t)i * npes);
    CHECK_EQ(out[32], -7);

    barrier();
    OK(dmapp_c_pset_destroy(ok_ps));
    RC_EQ(dmapp_c_pset_destroy(ok_ps), DMAPP_RC_INVALID_PARAM);
    RC_EQ(dmapp_c_pset_test(ok_ps), DMAPP_RC_INVALID_PARAM);
    /* The identifier is free again. */
    OK(dmapp_c_pset_create(&d, 1, 0, NULL, &ps));
    OK(dmapp_c_pset_destroy(ps));
    barrier();
    OK(dmapp_finalize());
    RC_EQ(dmapp_c_pset_create(&d, 2, 0, NULL, &ps), DMAPP_RC_INVALID_PARAM);          /* after finalize */
    printf("dmapp_coll_bad: PE %d ok\n", me);
    return 0;
}
