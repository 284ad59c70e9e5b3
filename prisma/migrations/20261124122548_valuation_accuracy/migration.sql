-- CreateTable
CREATE TABLE "valuation_accuracy" (
    "valuation_date" DATE NOT NULL,
    "segment" VARCHAR(16) NOT NULL,
    "value" VARCHAR(32) NOT NULL,
    "source" VARCHAR(16) NOT NULL,
    "items" INTEGER NOT NULL,
    "targets" INTEGER NOT NULL,
    "median_error" DOUBLE PRECISION NOT NULL,
    "p90_error" DOUBLE PRECISION NOT NULL,
    "calibration" DOUBLE PRECISION NOT NULL,
    "computed_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "valuation_accuracy_pkey" PRIMARY KEY ("valuation_date","segment","value")
);
