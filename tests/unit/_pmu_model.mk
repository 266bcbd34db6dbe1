# Not a test: what the tests of the PMU drivers and the branch-record back
# ends link besides the test and the driver under test (pmu_intel.c or
# pmu_amd.c): the drivers' common code and self-test on the register-level
# model, the kernel's self-test report with the fake of the run's spin
# loop, the stand-in core and the other fakes they call (pmu_*_test,
# lbr_*_test).  LBR_TEST_SRCS adds the branch-record driver, its back
# ends and the helpers of their tests.
# PMU_INTEL_SRCS is the Intel driver, in its two files.
# The leading '_' sorts it before the .mk files that use it.
PMU_MODEL_SRCS := arch/x86/pmu.c arch/x86/pmu_selftest.c \
	arch/x86/pmu_evtab.c arch/x86/pmu_evtab_data.c kern/perfmon/perfmon_evtab.c \
	kern/perfmon/perfmon_selftest.c tests/unit/fakes/perfmon_selftest.c \
	tests/unit/msr_model.c tests/unit/msr_model_lbr.c \
	tests/unit/msr_model_merge.c \
	tests/unit/pmu_test_common.c tests/unit/fakes/pmu_perfmon.c \
	tests/unit/fakes/cpu.c tests/unit/fakes/log.c kern/printf.c kern/error.c
LBR_TEST_SRCS := arch/x86/lbr.c arch/x86/lbr_intel.c arch/x86/lbr_arch.c \
	arch/x86/lbr_amd.c tests/unit/lbr_test_common.c $(PMU_MODEL_SRCS)
PMU_INTEL_SRCS := arch/x86/pmu_intel.c arch/x86/pmu_intel_probe.c
