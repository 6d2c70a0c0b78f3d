// SPDX-License-Identifier: GPL-2.0
/*
 * klogtest: provoke a kernel warning on purpose.
 *
 * The guest runner (vm-testbed/vm-run) fails any run whose kernel log shows
 * a warning, oops or similar.  This module exists only so the test suite can
 * prove that: "insmod klogtest.ko provoke=1" emits one WARN() splat and then
 * loads normally; without the parameter it does nothing.
 */
#include <linux/bug.h>
#include <linux/module.h>

static bool provoke;
module_param(provoke, bool, 0444);
MODULE_PARM_DESC(provoke, "emit one WARN() splat at load time");

static int __init klogtest_init(void)
{
	WARN(provoke, "klogtest: warning provoked on purpose\n");
	return 0;
}

static void __exit klogtest_exit(void)
{
}

module_init(klogtest_init);
module_exit(klogtest_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("ecnproxy testbed self-test: provoke a kernel warning");
