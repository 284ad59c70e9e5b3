-- AlterTable
ALTER TABLE "export_build" ADD COLUMN     "format" VARCHAR(8) NOT NULL DEFAULT 'json';

-- AlterTable
ALTER TABLE "export_current" DROP CONSTRAINT "export_current_pkey",
ADD COLUMN     "format" VARCHAR(8) NOT NULL DEFAULT 'json',
ADD CONSTRAINT "export_current_pkey" PRIMARY KEY ("app_id", "side", "format");
