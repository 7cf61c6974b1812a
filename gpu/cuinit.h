// lct_cuinit_status returns what the driver's cuInit returned (see cuinit.c).
int lct_cuinit_status(void);
