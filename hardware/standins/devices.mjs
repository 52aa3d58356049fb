// Stand-ins for physical Matter products (`twin lab demo`, and the bridge and lab tests): one matter.js ServerNode per
// process, of a kind nobody in this project wrote.
//
//   node devices.mjs KIND PORT PASSCODE DISCRIMINATOR
//
// KIND is "light" (a dimmable light), "thermostat" (heating and cooling) or "sensors" (one node
// with a temperature sensor on endpoint 1, humidity on 2, light on 3 and an air-quality sensor
// with PM10 on 4, at fixed readings). Storage goes to $MATTER_STORAGE_PATH. When the node is
// commissionable it prints one line: "ready KIND MANUAL_CODE".
import { ServerNode, Endpoint } from "@matter/main";
import { DimmableLightDevice } from "@matter/main/devices/dimmable-light";
import { ThermostatDevice } from "@matter/main/devices/thermostat";
import { TemperatureSensorDevice } from "@matter/main/devices/temperature-sensor";
import { HumiditySensorDevice } from "@matter/main/devices/humidity-sensor";
import { LightSensorDevice } from "@matter/main/devices/light-sensor";
import { AirQualitySensorDevice } from "@matter/main/devices/air-quality-sensor";
import { ThermostatServer } from "@matter/main/behaviors/thermostat";
import { Pm10ConcentrationMeasurementServer } from "@matter/main/behaviors/pm10-concentration-measurement";
import { AirQualityServer } from "@matter/main/behaviors/air-quality";

const [kind, port, passcode, discriminator] = process.argv.slice(2);
if (!["light", "thermostat", "sensors"].includes(kind)) {
    console.error(`unknown kind ${kind}; expected light, thermostat or sensors`);
    process.exit(2);
}
const MAIN_TYPE = { light: DimmableLightDevice, thermostat: ThermostatDevice, sensors: TemperatureSensorDevice };

const node = await ServerNode.create({
    id: `bridge-test-${kind}`,
    network: { port: Number(port) },
    commissioning: { passcode: Number(passcode), discriminator: Number(discriminator) },
    productDescription: { name: `Foreign ${kind}`, deviceType: MAIN_TYPE[kind].deviceType },
    basicInformation: {
        vendorName: "matter.js test vendor", vendorId: 0xfff1, productId: 0x8000,
        productName: `Foreign ${kind}`, nodeLabel: `Foreign ${kind}`,
        serialNumber: `mjs-${kind}-${port}`, uniqueId: `uid-${kind}-${port}`,
    },
});

if (kind === "light") {
    await node.add(new Endpoint(DimmableLightDevice, { id: "light", number: 1,
        onOff: { onOff: false }, levelControl: { currentLevel: 100, minLevel: 1, maxLevel: 254 } }));
} else if (kind === "thermostat") {
    const Thermostat = ThermostatDevice.with(ThermostatServer.with("Heating", "Cooling"));
    await node.add(new Endpoint(Thermostat, { id: "thermostat", number: 1, thermostat: {
        localTemperature: 2150, systemMode: 4, controlSequenceOfOperation: 4,
        occupiedHeatingSetpoint: 2000, occupiedCoolingSetpoint: 2600,
        minHeatSetpointLimit: 700, maxHeatSetpointLimit: 3000,
        minCoolSetpointLimit: 1600, maxCoolSetpointLimit: 3200 } }));
} else {
    await node.add(new Endpoint(TemperatureSensorDevice, { id: "temperature", number: 1,
        temperatureMeasurement: { measuredValue: 2150, minMeasuredValue: -4000, maxMeasuredValue: 8000 } }));
    await node.add(new Endpoint(HumiditySensorDevice, { id: "humidity", number: 2,
        relativeHumidityMeasurement: { measuredValue: 4820, minMeasuredValue: 0, maxMeasuredValue: 10000 } }));
    // IlluminanceMeasurement is 10000 * log10(lux) + 1: 30001 is 1000 lux.
    await node.add(new Endpoint(LightSensorDevice, { id: "illuminance", number: 3,
        illuminanceMeasurement: { measuredValue: 30001, minMeasuredValue: 1, maxMeasuredValue: 0xfffe } }));
    const AirQuality = AirQualitySensorDevice.with(AirQualityServer,
        Pm10ConcentrationMeasurementServer.with("NumericMeasurement"));
    await node.add(new Endpoint(AirQuality, { id: "air", number: 4, airQuality: { airQuality: 1 },
        pm10ConcentrationMeasurement: { measuredValue: 12.5, minMeasuredValue: 0, maxMeasuredValue: 1000,
                                        measurementUnit: 4, measurementMedium: 0 } }));
}

await node.start();
const { manualPairingCode } = node.state.commissioning.pairingCodes;
console.log(`ready ${kind} ${manualPairingCode}`);
