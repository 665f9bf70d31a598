/* Job shape, identity, node-local ranks, the Cray extensions, the option and
 * spawn calls, and the state after PMI_Finalize.
 * Usage: pmi_basic [PPN]  -- with PPN, rank r must sit on node r / PPN. */
#include "pmitest.h"

int main(int argc, char **argv)
{
    int rank, size, initialized = -1, v, i;
    int ppn = argc > 1 ? atoi(argv[1]) : 0;

    PMI_OK(PMI_Initialized(&initialized));
    CHECK_EQ(initialized, PMI_FALSE);
    pmitest_init(&rank, &size);
    PMI_OK(PMI_Initialized(&initialized));
    CHECK_EQ(initialized, PMI_TRUE);
    int again = -1;
    PMI_OK(PMI_Init(&again)); /* idempotent */

    int universe = -1, appnum = -1;
    PMI_OK(PMI_Get_universe_size(&universe));
    CHECK(universe >= size);
    PMI_OK(PMI_Get_appnum(&appnum));
    CHECK(appnum >= 0);

    /* identity: id, kvs domain id and kvs name agree and fit the maxima */
    int idmax, namemax, keymax, valmax;
    PMI_OK(PMI_Get_id_length_max(&idmax));
    PMI_OK(PMI_KVS_Get_name_length_max(&namemax));
    PMI_OK(PMI_KVS_Get_key_length_max(&keymax));
    PMI_OK(PMI_KVS_Get_value_length_max(&valmax));
    CHECK(idmax > 1 && namemax > 1 && keymax >= 16 && valmax >= 64);
    char *id = malloc(idmax), *dom = malloc(idmax), *name = malloc(namemax);
    PMI_OK(PMI_Get_id(id, idmax));
    PMI_OK(PMI_Get_kvs_domain_id(dom, idmax));
    PMI_OK(PMI_KVS_Get_my_name(name, namemax));
    CHECK(strlen(name) > 0);
    CHECK(strcmp(id, name) == 0 && strcmp(dom, name) == 0);
    /* the same job name on every rank */
    uint64_t h = fnv1a(name), *hs = malloc(size * sizeof *hs);
    PMI_OK(PMI_Allgather(&h, hs, sizeof h));
    for (i = 0; i < size; i++) CHECK(hs[i] == h);

    /* node ids: every rank's view of the whole job is the same */
    int mynid = -1, *nids = malloc(size * sizeof *nids), *all = malloc(size * sizeof *all);
    PMI_OK(PMI_Get_nid(rank, &mynid));
    for (i = 0; i < size; i++) PMI_OK(PMI_Get_nid(i, &nids[i]));
    CHECK_EQ(nids[rank], mynid);
    PMI_OK(PMI_Allgather(&mynid, all, sizeof(int)));
    for (i = 0; i < size; i++) CHECK_EQ(all[i], nids[i]);
    void *listp = NULL;
    PMI_OK(PMI_Get_nidlist_ptr(&listp));
    CHECK(listp != NULL);
    for (i = 0; i < size; i++) CHECK_EQ(((int *)listp)[i], nids[i]);
    if (ppn > 0)
        for (i = 0; i < size; i++) CHECK_EQ(nids[i], i / ppn);

    /* clique == ranks with my nid == pes on smp */
    int expect_local = 0, clique = -1, numpes = -1;
    for (i = 0; i < size; i++) expect_local += nids[i] == mynid;
    PMI_OK(PMI_Get_clique_size(&clique));
    PMI_OK(PMI_Get_numpes_on_smp(&numpes));
    CHECK_EQ(clique, expect_local);
    CHECK_EQ(numpes, expect_local);
    if (ppn > 0) CHECK(numpes <= ppn);
    int *cr = malloc(clique * sizeof(int)), *pes = malloc(clique * sizeof(int));
    PMI_OK(PMI_Get_clique_ranks(cr, clique));
    PMI_OK(PMI_Get_pes_on_smp(pes, numpes));
    int found_me = 0, prev = -1;
    for (i = 0; i < clique; i++) {
        CHECK(cr[i] > prev); prev = cr[i]; /* ascending, distinct */
        CHECK_EQ(nids[cr[i]], mynid);
        CHECK_EQ(pes[i], cr[i]);
        found_me |= cr[i] == rank;
    }
    CHECK(found_me);

    /* mesh: x = nid, y = z = 0; max is the highest nid */
    pmi_mesh_coord_t xyz, max;
    int maxnid = 0;
    for (i = 0; i < size; i++) if (nids[i] > maxnid) maxnid = nids[i];
    PMI_OK(PMI_Get_meshcoord((pmi_nid_t)mynid, &xyz));
    CHECK_EQ(xyz.mesh_x, mynid); CHECK_EQ(xyz.mesh_y, 0); CHECK_EQ(xyz.mesh_z, 0);
    PMI_OK(PMI_Get_max_dimension(&max));
    CHECK_EQ(max.mesh_x, maxnid); CHECK_EQ(max.mesh_y, 0); CHECK_EQ(max.mesh_z, 0);
    CHECK_EQ(PMI_Get_meshcoord((pmi_nid_t)(maxnid + 1), &xyz), PMI_ERR_INVALID_ARG);

    /* one application */
    PMI_OK(PMI_Get_rank_in_app(&v)); CHECK_EQ(v, rank);
    PMI_OK(PMI_Get_app_size(appnum, &v)); CHECK_EQ(v, size);
    CHECK_EQ(PMI_Get_app_size(appnum + 1, &v), PMI_ERR_INVALID_ARG);

    PMI_OK(PMI_Ibarrier());
    PMI_OK(PMI_Wait());

    /* launcher options: none recognised, arguments untouched */
    char a0[] = "prog", a1[] = "-x", *args[] = {a0, a1, NULL};
    int nparsed = -1, kvsize = -1, argc2 = 2;
    PMI_keyval_t *kv = (PMI_keyval_t *)1;
    PMI_OK(PMI_Parse_option(2, args, &nparsed, &kv, &kvsize));
    CHECK(nparsed == 0 && kv == NULL && kvsize == 0);
    char **argvp = args;
    kv = (PMI_keyval_t *)1; kvsize = -1;
    PMI_OK(PMI_Args_to_keyval(&argc2, (char *(*)[])&argvp, &kv, &kvsize));
    CHECK(argc2 == 2 && argvp == args && kv == NULL && kvsize == 0);
    PMI_OK(PMI_Free_keyvals(kv, kvsize));
    char opts[16] = "junk"; int olen = sizeof opts;
    PMI_OK(PMI_Get_options(opts, &olen));
    CHECK(olen == 0 && opts[0] == 0);

    /* spawning is not supported */
    const char *cmds[] = {"/bin/true"};
    const int maxprocs[] = {1}, infosz[] = {0};
    int errs[1] = {0};
    CHECK_EQ(PMI_Spawn_multiple(1, cmds, NULL, maxprocs, infosz, NULL, 0, NULL, errs), PMI_FAIL);
    CHECK_EQ(errs[0], PMI_FAIL);

    PMI_OK(PMI_Barrier());
    PMI_OK(PMI_Finalize());

    /* finalize is final */
    PMI_OK(PMI_Finalize());
    PMI_OK(PMI_Initialized(&initialized));
    CHECK_EQ(initialized, PMI_FALSE);
    CHECK_EQ(PMI_Get_rank(&v), PMI_ERR_INIT);
    CHECK_EQ(PMI_Barrier(), PMI_ERR_INIT);
    CHECK_EQ(PMI_Allgather(&v, all, sizeof v), PMI_ERR_INIT);
    CHECK_EQ(PMI_Init(&again), PMI_FAIL);
    printf("pmi_basic: rank %d of %d on nid %d (%d on node) ok\n", rank, size, mynid, numpes);
    return 0;
}
